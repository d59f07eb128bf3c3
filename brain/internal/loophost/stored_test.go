package loophost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// A stored agentloop and a stored Tool that Open cannot compile because
// the compilation cache's disk is full are not forgotten: while the disk
// stays full they are compiled again when named, and once it has room
// again they answer admitted and run, without being admitted again.
func TestStoredModulesCompiledAfterAFullDiskAtOpen(t *testing.T) {
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(`{"result":{"turns":1}}`))), data: [][]byte{active(0, `{"result":{"turns":1}}`)}}
	outcome := `{"outcome":{"status":"ok","value":1}}`
	tool := rawModule{pages: 1, alloc: i32c(1024), export: "run", entry: i64c(int64(len(outcome))), data: [][]byte{active(0, outcome)}}

	dir, tools := t.TempDir(), t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir, ToolsDir: tools, CacheDir: t.TempDir()})
	loopID := admit(t, h, loop.bytes())
	ta, err := h.AdmitTool(context.Background(), tool.bytes())
	if err != nil || ta.Status != loophost.StatusAdmitted {
		t.Fatalf("admit tool: %+v %v", ta, err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// An empty compilation cache on a disk that is then filled: the next
	// host compiles both modules and cannot write what it compiled.
	mnt := fullfs.Mount(t, 1<<20)
	cache := filepath.Join(mnt, "cache")
	openHost(t, loophost.Options{Dir: t.TempDir(), CacheDir: cache}).Close(context.Background())
	filler := fullfs.Fill(t, mnt)
	h2 := openHost(t, loophost.Options{Dir: dir, ToolsDir: tools, CacheDir: cache})

	if h2.Compiles() == 0 {
		t.Fatal("the stored modules were not compiled at Open")
	}
	// While the disk is full the modules are retried when named: they
	// answer admitted (wazero keeps what it compiled in memory) or fail
	// as a storage failure, never as unknown.
	if a, ok, err := h2.Find(context.Background(), loopID); !errors.Is(err, loophost.ErrStorage) && (!ok || a.Status != loophost.StatusAdmitted) {
		t.Fatalf("GET of a stored agentloop while the disk is full = %+v %v %v, want admitted or ErrStorage", a, ok, err)
	}
	if r := h2.RunTool(context.Background(), loophost.ToolCall{ID: ta.ID}); r.Type != envapi.ReceiptResult && (r.Code != "overloaded" || !r.Retryable) {
		t.Fatalf("run of a stored Tool while the disk is full = %+v, want its result or retryable overloaded", r)
	}

	filler.Free(t)
	a, ok, err := h2.Find(context.Background(), loopID)
	if err != nil || !ok || a.Status != loophost.StatusAdmitted {
		t.Fatalf("GET of a stored agentloop once the disk has room = %+v %v %v, want admitted", a, ok, err)
	}
	if r, err := run(t, h2, loopID, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn of the stored agentloop = %v %v", r, err)
	}
	if r := h2.RunTool(context.Background(), loophost.ToolCall{ID: ta.ID}); r.Type != envapi.ReceiptResult {
		t.Fatalf("run of the stored Tool once the disk has room = %+v, want its result", r)
	}
	if a, ok, err := h2.FindTool(context.Background(), ta.ID); err != nil || !ok || a.Status != loophost.StatusAdmitted {
		t.Fatalf("GET of the stored Tool = %+v %v %v, want admitted", a, ok, err)
	}
}

// A stored module whose bytes do not hash to its name is refused with an
// error that says so, and is never compiled; admitting the genuine bytes
// again replaces it.
func TestDamagedStoredModuleIsRefusedUntilAdmittedAgain(t *testing.T) {
	answer := `{"result":{"turns":1}}`
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	b := loop.bytes()
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	damaged := append([]byte(nil), b...)
	damaged[len(damaged)-1] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, id+".wasm"), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	h := openHost(t, loophost.Options{Dir: dir})
	compiles := h.Compiles()
	a, ok, err := h.Find(context.Background(), id)
	if err != nil || !ok || a.Status != loophost.StatusRejected || !strings.Contains(a.Error.Message, "does not match") {
		t.Fatalf("GET of a damaged stored module = %+v %v %v, want rejected as damaged", a, ok, err)
	}
	if _, err := h.Func(context.Background(), id); !errors.Is(err, loophost.ErrNotAdmitted) || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("Func of a damaged stored module = %v, want not admitted, naming the damage", err)
	}
	if h.Compiles() != compiles {
		t.Fatal("a damaged stored module was compiled")
	}

	if got := admit(t, h, b); got != id {
		t.Fatalf("admitted %s, want %s", got, id)
	}
	if r, err := run(t, h, id, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn of the module admitted again = %v %v", r, err)
	}
	if stored, err := os.ReadFile(filepath.Join(dir, id+".wasm")); err != nil || string(stored) != string(b) {
		t.Fatalf("the damaged file was not replaced: %v", err)
	}
}

// A stored module longer than the module size limit (admitted before the
// operator lowered it, or a file that grew on disk; here also a sparse
// file far past the limit) is not read at Open: it is answered rejected,
// saying why, and Open goes on. Once the limit allows it again it runs,
// without being admitted again.
func TestStoredModuleOverTheSizeLimitIsRefusedUnread(t *testing.T) {
	answer := `{"result":{"turns":1}}`
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	module := loop.bytes()
	dir := t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir})
	id := admit(t, h, module)
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sparse := strings.Repeat("a", 64)
	f, err := os.Create(filepath.Join(dir, sparse+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	limit := int64(len(module)) - 1
	h2 := openHost(t, loophost.Options{Dir: dir, MaxModuleBytes: limit})
	for _, name := range []string{id, sparse} {
		a, ok := h2.Admission(name)
		if !ok || a.Status != loophost.StatusRejected || a.Error == nil ||
			!strings.Contains(a.Error.Message, "module size limit") || !strings.Contains(a.Error.Message, "BRAIN_MAX_MODULE_BYTES") {
			t.Fatalf("stored module %s over the limit: %+v %v, want rejected naming the limit", name[:12], a, ok)
		}
	}
	_ = h2.Close(context.Background())

	h3 := openHost(t, loophost.Options{Dir: dir})
	if r, err := run(t, h3, id, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn once the limit allows the module = %v %v", r, err)
	}
}
