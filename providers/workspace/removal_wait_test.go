package workspace

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// removalHeld posts cmd, which removes c's workspace, and answers once it
// is removing it, held there until release is called (at the latest when
// the test ends); done gets cmd's answer.
func (f *fixture) removalHeld(t *testing.T, cmd envapi.Command) (release func(), done <-chan *envapi.Response) {
	t.Helper()
	removing, held := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	release = func() { released.Do(func() { close(held) }) }
	removeWorkspace = func(path string) error {
		once.Do(func() { close(removing) })
		<-held
		return removeTree(path)
	}
	t.Cleanup(func() {
		release()
		removeWorkspace = removeTree
	})
	answer := make(chan *envapi.Response, 1)
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", cmd)
		answer <- resp
	}()
	<-removing
	return release, answer
}

// An execute that arrives while a reset removes the old workspace (a
// large one takes long) runs in the fresh workspace at once, rather than
// waiting for the removal past its deadline.
func TestExecuteDuringResetRemovalDoesNotWait(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "old", "content": "1"}, nil), nil)
	release, done := f.removalHeld(t, c.Call("reset", nil))

	ok(t, postWithin(t, f, c.Execute(tool("write"), mustJSON(t, map[string]string{"path": "new", "content": "2"}), envtest.Millis(1000)), 5*time.Second), nil)
	var list toolset.ListOutput
	ok(t, postWithin(t, f, c.Execute(tool("list"), mustJSON(t, map[string]any{}), envtest.Millis(1000)), 5*time.Second), &list)
	if len(list.Entries) != 1 || list.Entries[0].Path != "new" {
		t.Errorf("the workspace after the reset holds %v, want new only", list.Entries)
	}
	release()
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptResult {
		t.Fatalf("reset = %+v, want a result", resp)
	}
	ok(t, f.exec(c, "read", map[string]string{"path": "new"}, nil), nil)
}

// An execute, an inspect or a second teardown arriving while a teardown
// removes the workspace: the execute and the inspect answer unavailable
// at once, rather than once the removal is done; the second teardown
// answers once it is done.
func TestOperationsDuringTeardownRemovalDoNotWait(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
	release, done := f.removalHeld(t, c.Teardown())

	fails(t, postWithin(t, f, c.Execute(tool("read"), mustJSON(t, map[string]string{"path": "a"}), envtest.Millis(1000)), 5*time.Second), envapi.CodeUnavailable)
	fails(t, postWithin(t, f, c.Call("inspect", nil), 5*time.Second), envapi.CodeUnavailable)

	second := make(chan *envapi.Response, 1)
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", c.Teardown())
		second <- resp
	}()
	select {
	case resp := <-second:
		t.Fatalf("a second teardown answered %+v before the first's removal was done", resp)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	for _, ch := range []<-chan *envapi.Response{done, second} {
		if resp := <-ch; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
			t.Fatalf("teardown = %+v, want accepted", resp)
		}
	}
}
