package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A provider killed part-way through a reset leaves the binding reset, not
// in between: after a restart the binding is new, the next execute
// allocates an empty workspace, and the half-removed directory is gone. It
// is neither served as the binding's workspace with some of its files
// missing nor reported as a loss.
func TestResetKilledPartWayLeavesTheBindingReset(t *testing.T) {
	root := t.TempDir()
	c, old := killedInRemoval(t, root, func(c *envtest.Commands) envapi.Command { return c.Call("reset", nil) })

	f := newFixture(t, Options{Root: root})
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Phase != phaseNew || in.Allocated {
		t.Errorf("inspect after a reset killed part-way and a restart: %+v, want phase new", in)
	}
	fails(t, f.exec(c, "read", map[string]string{"path": "b"}, nil), envapi.CodeNotFound)
	var ls toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{}, nil), &ls)
	if len(ls.Entries) != 0 {
		t.Errorf("the workspace after the reset: %+v, want empty", ls.Entries)
	}
	if dirs := workspaceDirs(t, root); len(dirs) != 1 || dirs[0] == old {
		t.Errorf("workspaces after the restart: %v, want one other than %s", dirs, old)
	}
	if reports := c.Brain.Filter(func(cl envtest.Call) bool { return cl.Kind == envtest.KindReporter }); len(reports) != 0 {
		t.Errorf("reports: %v", reports)
	}
}

// Nor does a provider killed part-way through a teardown bring the binding
// back with what is left of its workspace: after a restart the binding is
// gone and so is its directory.
func TestTeardownKilledPartWayLeavesNothing(t *testing.T) {
	root := t.TempDir()
	c, _ := killedInRemoval(t, root, (*envtest.Commands).Teardown)

	f := newFixture(t, Options{Root: root})
	fails(t, f.exec(c, "read", map[string]string{"path": "b"}, nil), envapi.CodeUnavailable)
	if dirs := workspaceDirs(t, root); len(dirs) != 0 {
		t.Errorf("workspaces after the restart: %v", dirs)
	}
	if files, _ := filepath.Glob(filepath.Join(root, "bindings", "*")); len(files) != 0 {
		t.Errorf("state files after the restart: %v", files)
	}
}

// killedInRemoval starts a provider process on root that dies part-way
// through removing a workspace, sets up a binding with two files, and
// posts the command op makes of it, which the provider dies in. It
// answers the binding's commands and the workspace directory it had.
func killedInRemoval(t *testing.T, root string, op func(*envtest.Commands) envapi.Command) (*envtest.Commands, string) {
	t.Helper()
	child, url := startProviderProcess(t, root, dieInRemovalEnv+"=1")
	c := envtest.NewCommands("s1", "workspace")
	c.Brain = envtest.NewBrain(t)
	accepted(t, postTo(t, url, c.Setup(nil)))
	for _, name := range []string{"a", "b"} {
		ok(t, postTo(t, url, c.Execute(tool("write"), mustJSON(t, map[string]string{"path": name, "content": name}), nil)), nil)
	}
	old := workspaceDirs(t, root)
	if len(old) != 1 {
		t.Fatalf("workspaces: %v", old)
	}
	if _, _, resp, err := envtest.Post(t.Context(), nil, url, "", op(c)); err == nil {
		t.Fatalf("the provider answered %+v; it was to die in the removal", resp)
	}
	_ = child.Wait()
	if _, err := os.Stat(filepath.Join(root, "workspaces", old[0], "b")); err != nil {
		t.Fatalf("the provider died before the removal reached its point: %v", err)
	}
	return c, old[0]
}
