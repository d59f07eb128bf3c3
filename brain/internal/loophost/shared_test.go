package loophost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// memShared is an in-memory loophost.SharedModules, standing for a
// cluster's store; fail makes every read fail as an unreachable database.
type memShared struct {
	mu    sync.Mutex
	mods  map[string][]byte
	fail  bool
	reads int
}

func (m *memShared) PutModule(_ context.Context, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	id := hex.EncodeToString(sum[:])
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mods == nil {
		m.mods = map[string][]byte{}
	}
	m.mods[id] = append([]byte(nil), b...)
	return id, nil
}

func (m *memShared) SharedModule(_ context.Context, id string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail {
		return nil, false, fmt.Errorf("memShared: %w", journal.ErrOverloaded)
	}
	b, ok := m.mods[id]
	return b, ok, nil
}

// TestSharedToolsReachEveryHost: a Tool admitted on one host is stored in
// Options.SharedTools, not in the agentloop store; another host over the
// same stores answers it admitted, runs it and keeps it in its own tools
// directory; bytes that do not hash to the id are refused and never run;
// an unreadable store fails the call as retryable overloaded.
func TestSharedToolsReachEveryHost(t *testing.T) {
	loops, tools := &memShared{}, &memShared{}
	a := openHost(t, loophost.Options{ToolsDir: t.TempDir(), Shared: loops, SharedTools: tools})
	adm, err := a.AdmitTool(context.Background(), toolModule(t))
	if err != nil || adm.Status != loophost.StatusAdmitted {
		t.Fatalf("admit on A: %+v %v", adm, err)
	}
	if len(tools.mods) != 1 || len(loops.mods) != 0 {
		t.Fatalf("stores after a Tool admission: %d tools, %d agentloops; want 1, 0", len(tools.mods), len(loops.mods))
	}

	bDir := t.TempDir()
	b := openHost(t, loophost.Options{ToolsDir: bDir, Shared: loops, SharedTools: tools})
	if _, ok := b.ToolAdmission(adm.ID); ok {
		t.Fatal("B knows the Tool before it was named there")
	}
	if got, ok, err := b.FindTool(context.Background(), adm.ID); err != nil || !ok || got != adm {
		t.Fatalf("FindTool on B = %+v %v %v, want %+v", got, ok, err, adm)
	}
	if _, ok, err := b.Find(context.Background(), adm.ID); ok || err != nil {
		t.Fatalf("the Tool is an agentloop on B: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(bDir, adm.ID+".wasm")); err != nil {
		t.Errorf("B's local copy: %v", err)
	}
	if got := okValue(t, runOp(t, b, adm.ID, loophost.ToolCall{}, `{"op":"echo","n":3}`)); got != `{"op":"echo","n":3}` {
		t.Errorf("run on B = %s", got)
	}

	// A third host, fetching altered bytes, refuses them.
	tools.mu.Lock()
	tools.mods[adm.ID] = append(tools.mods[adm.ID], 0, 4, 3, 'a', 'b', 'c')
	tools.mu.Unlock()
	cDir := t.TempDir()
	c := openHost(t, loophost.Options{ToolsDir: cDir, SharedTools: tools})
	if _, ok, err := c.FindTool(context.Background(), adm.ID); ok || !errors.Is(err, loophost.ErrDamaged) {
		t.Fatalf("FindTool of altered bytes = %v %v, want ErrDamaged", ok, err)
	}
	failure(t, runOp(t, c, adm.ID, loophost.ToolCall{}, `{"op":"echo"}`), envapi.CodeUnsupported)
	if _, err := c.ParseToolImplementation([]byte(`{"type":"brain_component","entrypoint":"run","id":"` + adm.ID + `"}`)); !errors.Is(err, loophost.ErrDamaged) {
		t.Errorf("a placement on altered bytes = %v, want ErrDamaged", err)
	}
	if _, err := os.Stat(filepath.Join(cDir, adm.ID+".wasm")); err == nil {
		t.Error("C stored the altered bytes")
	}

	// An unreadable store: nothing known, the call may be retried.
	tools.mu.Lock()
	tools.fail = true
	tools.mu.Unlock()
	d := openHost(t, loophost.Options{ToolsDir: t.TempDir(), SharedTools: tools})
	if _, _, err := d.FindTool(context.Background(), adm.ID); !errors.Is(err, journal.ErrOverloaded) {
		t.Errorf("FindTool with the store down = %v", err)
	}
	if r := runOp(t, d, adm.ID, loophost.ToolCall{}, `{"op":"echo"}`); r.Type != envapi.ReceiptFailure || r.Code != api.CodeOverloaded || !r.Retryable {
		t.Errorf("a run with the store down = %+v, want retryable overloaded", r)
	}
}

// Naming an agentloop while the cluster's store cannot be read fails as
// the same store fails a Tool's run: with a retryable overloaded
// TurnError wrapping the store's error, which the engine records as such
// and not as a failure of the loop (agentloop_failed). The same name
// resolves once the store answers.
func TestLoopWithTheSharedStoreDownIsRetryable(t *testing.T) {
	loops := &memShared{}
	id, _ := loops.PutModule(context.Background(), answering("", `{"result":1}`))
	loops.fail = true
	h := openHost(t, loophost.Options{CacheDir: t.TempDir(), Shared: loops})
	for name, resolve := range resolvers(h, id) {
		if _, err := resolve(); !overloadedTurn(err, journal.ErrOverloaded) {
			t.Errorf("%s with the store down: %v, want a retryable overloaded TurnError wrapping the store's error", name, err)
		}
	}
	loops.mu.Lock()
	loops.fail = false
	loops.mu.Unlock()
	if _, err := h.Func(context.Background(), id); err != nil {
		t.Errorf("Func once the store answers: %v", err)
	}
}
