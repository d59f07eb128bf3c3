package workspace

import (
	"encoding/json"
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
	measureWorkspace = func(dir string) (usage, error) {
		once.Do(func() { answered <- f.post(op) })
		return measure(dir)
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
