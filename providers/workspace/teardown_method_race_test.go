package workspace

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// answeredWithin answers the response answered gets within wait, or
// fails the test.
func answeredWithin(t *testing.T, answered <-chan *envapi.Response, wait time.Duration) *envapi.Response {
	t.Helper()
	select {
	case resp := <-answered:
		if resp == nil {
			t.Fatal("no answer")
		}
		return resp
	case <-time.After(wait):
		t.Fatalf("no answer within %v", wait)
	}
	return nil
}

// A method that arrives while a teardown removes its binding's workspace
// finds the binding torn down: it answers unavailable at once, not once
// the removal is done, and neither records nor reports the removed
// workspace as a loss. Recording it would write the binding's
// state again, and a restarted provider would bring the torn-down binding
// back.
func TestMethodDuringTeardownDoesNotBringTheBindingBack(t *testing.T) {
	for _, m := range []struct {
		name, input string
	}{
		{"inspect", `{}`},
		{"release", `{"sequence": 2}`},
	} {
		t.Run(m.name, func(t *testing.T) {
			f := newFixture(t, Options{Release: ReleaseWipe})
			c := f.commands("s1")
			accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
			ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)

			release, done := f.teardownHeld(t, c)

			call := c.Call(m.name, json.RawMessage(m.input))
			answered := make(chan *envapi.Response, 1)
			go func() {
				_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", call)
				answered <- resp
			}()
			resp := answeredWithin(t, answered, 5*time.Second)
			release()
			if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("teardown = %+v, want accepted", resp)
			}
			if r := resp.Receipt; r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeUnavailable {
				t.Errorf("%s after teardown = %s %s %s, want failure unavailable", m.name, r.Type, r.Code, r.Output)
			}

			if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
				t.Errorf("state files after teardown: %v", files)
			}
			if reports := f.brain.Filter(func(cl envtest.Call) bool { return cl.Kind == envtest.KindReporter }); len(reports) != 0 {
				t.Errorf("reports for a torn-down binding: %v", reports)
			}
			g := f.restart(Options{})
			fails(t, g.exec(c, "list", map[string]any{}, nil), envapi.CodeUnavailable)
		})
	}
}

// A detach that arrives while a teardown removes its binding's workspace
// answers unavailable, at once, like any other operation on a torn-down
// binding: the session is not told the workspace was kept.
func TestDetachDuringTeardownIsUnavailable(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)

	release, done := f.teardownHeld(t, c)
	detach := c.Detach()
	answered := make(chan *envapi.Response, 1)
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", detach)
		answered <- resp
	}()
	resp := answeredWithin(t, answered, 5*time.Second)
	release()
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v, want accepted", resp)
	}
	fails(t, resp.Receipt, envapi.CodeUnavailable)
}
