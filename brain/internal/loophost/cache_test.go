package loophost_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// A compilation cache whose entries were damaged on disk (bits flipped
// or cut short by a failing disk) does not turn an admitted module into a
// rejected one: the damaged entries are discarded, the module is compiled
// again, answers admitted and runs, and a module admitted afresh is
// admitted.
func TestDamagedCompilationCacheIsRecompiled(t *testing.T) {
	answer := `{"result":{"turns":1}}`
	loop := rawModule{pages: 1, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	other := rawModule{pages: 2, alloc: i32c(1024), entry: i64c(int64(len(answer))), data: [][]byte{active(0, answer)}}
	dir, cache := t.TempDir(), t.TempDir()
	h := openHost(t, loophost.Options{Dir: dir, CacheDir: cache})
	id := admit(t, h, loop.bytes())
	// Compiled into the cache, then its admission forgotten: admitting
	// it below reads the cache entry.
	if a, err := h.Admit(context.Background(), other.bytes()); err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit: %+v %v", a, err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	var damaged int
	err := filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i := len(b) / 2; i < len(b); i += 7 {
			b[i] ^= 0x5a
		}
		damaged++
		return os.WriteFile(p, b, 0o600)
	})
	if err != nil || damaged == 0 {
		t.Fatalf("damaging the cache: %d entries, %v", damaged, err)
	}

	h2 := openHost(t, loophost.Options{Dir: dir, CacheDir: cache})
	if a, ok, err := h2.Find(context.Background(), id); err != nil || !ok || a.Status != loophost.StatusAdmitted {
		t.Fatalf("stored module with a damaged cache entry = %+v %v %v, want admitted", a, ok, err)
	}
	if r, err := run(t, h2, id, newFake(), "hi"); err != nil || r["turns"] != 1.0 {
		t.Fatalf("turn = %v %v", r, err)
	}
	h3 := openHost(t, loophost.Options{Dir: otherDir, CacheDir: cache})
	if a, err := h3.Admit(context.Background(), other.bytes()); err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admission of a module with a damaged cache entry = %+v %v, want admitted", a, err)
	}
}
