package workspace

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An execute that gives up (its deadline passed, it was cancelled) while
// the allocation it started has not run yet leaves that allocation to run
// on its own, possibly after the binding was torn down: it must not bring
// the binding back, neither its directory nor its state, which a restarted
// provider would load as a live binding.
func TestAllocationAfterTeardownLeavesNothing(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	b, err := f.p.lookup("s1/workspace")
	if err != nil {
		t.Fatal(err)
	}
	accepted(t, f.post(c.Teardown()))

	// The late allocation, as the goroutine envsdk.Lazy started runs it.
	if _, err := b.allocate(context.Background()); err == nil {
		t.Error("an allocation for a torn-down binding succeeded")
	}
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Errorf("workspaces after teardown: %v", dirs)
	}
	if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
		t.Errorf("state files after teardown: %v", files)
	}
	g := f.restart(Options{})
	fails(t, g.exec(c, "list", map[string]any{}, nil), envapi.CodeUnavailable)
}
