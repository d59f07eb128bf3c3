package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Once Close released the root another provider may start on it: the
// closed provider, whose handler may still be reached, refuses every
// operation with unavailable and writes nothing there, so the two never
// act on the same state and workspaces.
func TestOperationsAfterCloseAreUnavailable(t *testing.T) {
	f := newFixture(t, Options{Release: ReleaseWipe})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`))))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "kept"}, nil), nil)
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Root: f.root})
	if err != nil {
		t.Fatalf("New on the root of a closed provider: %v", err)
	}
	t.Cleanup(func() { g.Close() })

	other := f.commands("s2")
	for _, op := range []struct {
		name string
		cmd  envapi.Command
	}{
		{"setup", other.Setup(nil)},
		{"write", c.Execute(tool("write"), mustJSON(t, map[string]string{"path": "g", "content": "lost"}), nil)},
		{"read", c.Execute(tool("read"), mustJSON(t, map[string]string{"path": "f"}), nil)},
		{"command", c.Execute(tool("command"), mustJSON(t, sh("echo late > late")), nil)},
		{"release", c.Call("release", json.RawMessage(`{"sequence": 2}`))},
		{"reset", c.Call("reset", nil)},
		{"inspect", c.Call("inspect", nil)},
		{"detach", c.Detach()},
		{"teardown", c.Teardown()},
	} {
		r := f.post(op.cmd)
		if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeUnavailable {
			t.Errorf("%s after Close = %s %s %s, want failure unavailable", op.name, r.Type, r.Code, r.Message)
		}
	}

	states, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*"))
	if len(states) != 1 {
		t.Errorf("state files after the closed provider was asked to act: %v, want s1's alone", states)
	}
	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces after the closed provider was asked to act: %v", dirs)
	}
	ws := filepath.Join(f.root, "workspaces", dirs[0])
	if b, err := os.ReadFile(filepath.Join(ws, "f")); err != nil || string(b) != "kept" {
		t.Errorf("the workspace's file: %q %v, want kept", b, err)
	}
	for _, name := range []string{"g", "late"} {
		if _, err := os.Stat(filepath.Join(ws, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s in the workspace after Close: %v", name, err)
		}
	}
}

// Close stops the commands running and waits for their executes to end
// before it releases the root: none of them writes into a root that
// another provider may have taken, and each answers cancelled.
func TestCloseStopsRunningCommandsBeforeReleasingTheRoot(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	answer := make(chan *envapi.Response, 1)
	run := c.Execute(tool("command"), mustJSON(t, sh("sleep 300; echo late > late")), nil)
	go func() {
		_, _, resp, _ := envtest.Post(context.Background(), nil, f.url, "secret-token", run)
		answer <- resp
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(markedProcesses(t, f.root)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := markedProcesses(t, f.root); len(pids) != 0 {
		t.Errorf("commands still running once Close returned: %v", pids)
	}
	g, err := New(Options{Root: f.root})
	if err != nil {
		t.Fatalf("New once Close returned: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	select {
	case resp := <-answer:
		if resp == nil {
			t.Fatal("no answer to the execute")
		}
		fails(t, resp.Receipt, envapi.CodeCancelled)
	case <-time.After(30 * time.Second):
		t.Fatal("the execute was not answered after Close")
	}
}

// An operation that is writing the root when Close begins is let finish
// before the root is released: until then another provider cannot take
// it, and once it is released the operation's work is complete.
func TestCloseWaitsForOperationsInFlight(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	release, done := f.teardownHeld(t, c)

	closed := make(chan error, 1)
	go func() { closed <- f.p.Close() }()
	waitGoroutineIn(t, "workspace.(*Provider).Close", "sync.(*WaitGroup).Wait")
	if _, err := New(Options{Root: f.root}); !errors.Is(err, ErrRootInUse) {
		t.Fatalf("New while a teardown of the closing provider runs: %v, want %v", err, ErrRootInUse)
	}
	fails(t, f.post(f.commands("s2").Setup(nil)), envapi.CodeUnavailable)
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a teardown ran", err)
	default:
	}

	release()
	if resp := <-done; resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v, want accepted", resp)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Root: f.root})
	if err != nil {
		t.Fatalf("New once Close returned: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Errorf("workspaces after the teardown: %v", dirs)
	}
	if states, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(states) != 0 {
		t.Errorf("state files after the teardown: %v", states)
	}
}

// waitGoroutineIn waits until a goroutine running fn is blocked in
// waitingIn.
func waitGoroutineIn(t *testing.T, fn, waitingIn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, fn) && strings.Contains(g, waitingIn) {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no goroutine of %s waits in %s", fn, waitingIn)
}
