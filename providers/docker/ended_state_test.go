package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// stateFiles lists the state files in dir.
func stateFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), stateSuffix) {
			names = append(names, e.Name())
		}
	}
	return names
}

// A provider keeps the state of live bindings only: a torn-down binding
// leaves no file in the state directory and nothing in memory, however
// many bindings came and went, and still answers unavailable, accepts a
// repeated teardown and a new setup of the same key. A tombstone an
// earlier version left is removed by the next start.
func TestTeardownLeavesNoState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, dir)
	live := h.commands()
	h.setup(live, "")
	for i := range 3 {
		c := h.commands()
		h.setup(c, "")
		if i == 0 {
			h.shell(c, "true") // allocated: a container and a volume
		}
		if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown = %+v", r)
		}
		if r := h.post(c.Teardown()); r.Type != envapi.ReceiptAccepted {
			t.Fatalf("second teardown = %+v", r)
		}
		failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeUnavailable)
	}
	if files := stateFiles(t, dir); len(files) != 1 {
		t.Fatalf("state directory holds %d files after 3 teardowns, want 1 (the live binding): %v", len(files), files)
	}
	h.p.mu.Lock()
	n := len(h.p.bindings)
	h.p.mu.Unlock()
	if n != 1 {
		t.Fatalf("the provider remembers %d bindings, want 1", n)
	}

	// The same key set up again after its teardown works as a new binding.
	again := h.commands()
	h.setup(again, "")
	if r := h.post(again.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}
	h.setup(again, "")
	if out := h.shell(again, "echo back"); out.Stdout != "back\n" {
		t.Fatalf("execute after a new setup = %+v", out)
	}
	if r := h.post(again.Teardown()); r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", r)
	}

	// A tombstone written before this version is removed at start.
	old := goodState("old-session/box")
	old.Phase = phaseDeleted
	old.UpdatedAt = time.Now().UTC()
	if err := h.p.store.create(old); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, dir)
	if _, err := os.Stat(h2.p.store.path(old.Key)); !os.IsNotExist(err) {
		t.Fatalf("tombstone %s after a restart: %v, want it removed", filepath.Base(h2.p.store.path(old.Key)), err)
	}
	if files := stateFiles(t, dir); len(files) != 1 {
		t.Fatalf("state directory holds %v after a restart, want the live binding only", files)
	}
	if out := h2.shell(live, "echo alive"); out.Stdout != "alive\n" {
		t.Fatalf("live binding after a restart = %+v", out)
	}
}
