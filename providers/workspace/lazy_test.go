package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A binding that never executed has no directory: inspect, reset and a
// wiping release create none, and its teardown leaves neither a directory
// nor state behind, across a restart too.
func TestNeverUsedBindingCreatesNothing(t *testing.T) {
	f := newFixture(t, Options{Release: ReleaseWipe})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	ok(t, f.post(c.Call("reset", nil)), nil)
	ok(t, f.post(c.Call("release", json.RawMessage(`{"sequence": 2}`))), nil)
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Allocated || in.Phase != phaseNew {
		t.Errorf("inspect %+v, want nothing allocated", in)
	}
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 || f.p.allocations.Load() != 0 {
		t.Fatalf("a binding that never executed has workspaces %v (%d allocations)", dirs, f.p.allocations.Load())
	}
	accepted(t, f.post(c.Teardown()))
	states, err := os.ReadDir(filepath.Join(f.root, "bindings"))
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 0 {
		t.Errorf("teardown left state %v", states)
	}
	g := f.restart(Options{})
	fails(t, g.post(c.Call("inspect", nil)), envapi.CodeUnavailable)
	if dirs := workspaceDirs(t, g.root); len(dirs) != 0 {
		t.Errorf("workspaces %v after restart", dirs)
	}
}

// An execute or a method on a binding that is not set up, or was torn
// down, answers unavailable whatever it asks for (a tool the provider
// lacks, an input the method refuses), as every other operation on it
// does.
func TestOperationsOnUnknownBindingAreUnavailable(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	teleport := func() envapi.Command {
		return c.Execute(json.RawMessage(`{"tool":"teleport"}`), json.RawMessage(`{}`), nil)
	}
	bogus := json.RawMessage(`{"bogus": 1}`)
	unknown := func(when string) {
		t.Helper()
		for _, cmd := range []envapi.Command{teleport(), c.Call("reset", bogus), c.Call("release", bogus), c.Call("inspect", bogus)} {
			if r := f.post(cmd); r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeUnavailable {
				t.Errorf("%s: %s %s: %s %s, want failure unavailable", when, cmd.Operation.Request.Type, cmd.Operation.Request.Name, r.Type, r.Code)
			}
		}
	}
	unknown("before setup")
	accepted(t, f.post(c.Setup(nil)))
	fails(t, f.post(teleport()), envapi.CodeUnsupported)
	for _, m := range []string{"reset", "release", "inspect"} {
		fails(t, f.post(c.Call(m, bogus)), envapi.CodeInvalidInput)
	}
	accepted(t, f.post(c.Teardown()))
	unknown("after teardown")
	// A restarted provider's handler has no memory of the teardown: the
	// provider's own answer is heard.
	f = f.restart(Options{})
	unknown("after teardown and a restart")
}
