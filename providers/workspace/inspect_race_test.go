package workspace

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// measureAfter makes the next measure of inspect run op first, as an
// operation that arrives while inspect is about to measure the workspace.
func (f *fixture) measureAfter(t *testing.T, op envapi.Command) <-chan envapi.Receipt {
	t.Helper()
	answered := make(chan envapi.Receipt, 1)
	var once sync.Once
	measureWorkspace = func(ctx context.Context, dir string) (usage, error) {
		once.Do(func() { answered <- f.post(op) })
		return measure(ctx, dir)
	}
	t.Cleanup(func() { measureWorkspace = measure })
	return answered
}

// An inspect that found the workspace in place, and measures it while a
// teardown removes it, answers unavailable like any operation on a
// torn-down binding, never the size of part of the workspace nor
// not_found.
func TestInspectDuringTeardownIsUnavailable(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	teardown := f.measureAfter(t, c.Teardown())
	fails(t, f.post(c.Call("inspect", nil)), envapi.CodeUnavailable)
	accepted(t, <-teardown)
}

// An inspect that measures the workspace while a reset drops it answers
// the binding as the reset left it.
func TestInspectDuringResetAnswersTheResetBinding(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	reset := f.measureAfter(t, c.Call("reset", json.RawMessage(`{}`)))
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	ok(t, <-reset, nil)
	if in.Allocated || in.Phase != phaseNew || in.Files != 0 {
		t.Errorf("inspect %+v, want the new phase of a reset binding", in)
	}
}

// identifyAfter makes the next look at the workspace directory (the
// check inspect makes that it is still the directory allocated) run op
// first, as an operation that arrives just before it.
func (f *fixture) identifyAfter(t *testing.T, op envapi.Command) <-chan envapi.Receipt {
	t.Helper()
	answered := make(chan envapi.Receipt, 1)
	var once sync.Once
	statDir = func(path string) (fs.FileInfo, error) {
		once.Do(func() { answered <- f.post(op) })
		return os.Lstat(path)
	}
	t.Cleanup(func() { statDir = os.Lstat })
	return answered
}

// An inspect that read the binding just before a reset dropped its
// workspace, and checks the directory once it is gone, answers the
// binding as the reset left it: the directory a reset removed is no
// workspace lost.
func TestInspectBeforeResetIsNoLoss(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	reset := f.identifyAfter(t, c.Call("reset", json.RawMessage(`{}`)))
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	ok(t, <-reset, nil)
	if in.Phase != phaseNew || in.Allocated || in.Error != "" {
		t.Errorf("inspect %+v, want the new phase of a reset binding", in)
	}
	// Nothing was recorded as lost either: the next execute allocates.
	ok(t, f.exec(c, "list", map[string]string{}, nil), nil)
}

// A wiping release that read the binding just before a reset dropped its
// workspace wipes what the reset left: the directory the reset removed is
// no loss, which a release would leave for reset.
func TestReleaseBeforeResetIsNoLoss(t *testing.T) {
	f := newFixture(t, Options{Release: ReleaseWipe})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	reset := f.identifyAfter(t, c.Call("reset", json.RawMessage(`{}`)))
	var out struct {
		Released bool `json:"released"`
	}
	ok(t, f.post(c.Call("release", json.RawMessage(`{"sequence": 2}`))), &out)
	ok(t, <-reset, nil)
	if !out.Released {
		t.Errorf("release answered released false after a reset dropped the workspace, want the wipe done")
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Phase != phaseNew {
		t.Errorf("inspect %+v, want the new phase", in)
	}
}
