package workspace

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// waitBlockedIn waits until a goroutine running fn waits for a mutex.
func waitBlockedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, fn) && strings.Contains(g, "sync.(*Mutex).Lock") {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine of %s waits for a lock", fn)
}

// A method that looked the binding up just before a teardown removed its
// workspace, and runs once the teardown is done, finds the binding torn
// down: it answers unavailable, and neither records nor reports the
// removed workspace as a loss. Recording it would write the binding's
// state again, and a restarted provider would bring the torn-down binding
// back.
func TestMethodDuringTeardownDoesNotBringTheBindingBack(t *testing.T) {
	for _, m := range []struct {
		name, input, fn string
	}{
		{"inspect", `{}`, "workspace.(*Provider).inspect"},
		{"release", `{"sequence": 2}`, "workspace.(*Provider).release"},
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
			waitBlockedIn(t, m.fn)
			release()
			if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
				t.Fatalf("teardown = %+v, want accepted", resp)
			}
			resp := <-answered
			if resp == nil {
				t.Fatal("no answer to the method")
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

// A detach that looked the binding up just before a teardown removed its
// workspace, and runs once the teardown is done, answers unavailable like
// any other operation on a torn-down binding: the session is not told the
// workspace was kept.
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
	waitBlockedIn(t, "workspace.(*Provider).Detach")
	release()
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v, want accepted", resp)
	}
	resp := <-answered
	if resp == nil {
		t.Fatal("no answer to the detach")
	}
	fails(t, resp.Receipt, envapi.CodeUnavailable)
}
