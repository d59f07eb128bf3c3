package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// heldWorkspace sets up a binding of f whose workspace holds the file a,
// and takes the lock a write or edit of its workspace holds while it
// runs, as a long write without a deadline does; the lock is released
// when the test ends, or by calling release.
func heldWorkspace(t *testing.T, f *fixture) (c *envtest.Commands, release func()) {
	t.Helper()
	c = f.commands("s1")
	setup := c.Setup(nil)
	accepted(t, f.post(setup))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "old"}, nil), nil)
	b, err := f.p.lookup(envsdk.BindingKey(setup.Operation))
	if err != nil {
		t.Fatal(err)
	}
	sp, err, done := b.lazy.Peek()
	if !done || err != nil {
		t.Fatalf("workspace not allocated: %v", err)
	}
	sp.grow.Lock()
	released := false
	release = func() {
		if !released {
			released = true
			sp.grow.Unlock()
		}
	}
	t.Cleanup(release)
	return c, release
}

// postWithin posts cmd and answers its receipt, or fails the test when no
// answer comes within wait.
func postWithin(t *testing.T, f *fixture, cmd envapi.Command, wait time.Duration) envapi.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	_, body, resp, err := envtest.Post(ctx, nil, f.url, "secret-token", cmd)
	if err != nil || resp == nil {
		t.Fatalf("no answer within %v: %v %s", wait, err, body)
	}
	return resp.Receipt
}

// A command waiting for a write or edit of its workspace to finish answers
// timeout at its own timeout, or at the execute's deadline, and never
// starts: nothing it would have done is done once the write finishes.
func TestCommandWaitingForAWriteStopsAtItsTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		input    map[string]any
		deadline *int64
	}{
		{"timeout", map[string]any{"shell": "touch ran", "timeout_ms": 200}, nil},
		{"deadline", map[string]any{"shell": "touch ran"}, envtest.Millis(200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			c, release := heldWorkspace(t, f)
			r := postWithin(t, f, c.Execute(tool("command"), mustJSON(t, tc.input), tc.deadline), 5*time.Second)
			fails(t, r, envapi.CodeTimeout)
			if !strings.Contains(r.Message, "did not start") {
				t.Errorf("the message %q does not say the command did not start", r.Message)
			}
			release()
			ok(t, f.exec(c, "write", map[string]string{"path": "b", "content": "next"}, nil), nil)
			time.Sleep(100 * time.Millisecond)
			if _, err := os.Stat(filepath.Join(workspaceDir(t, f), "ran")); err == nil {
				t.Error("the command that answered timeout ran once the write was done")
			}
		})
	}
}

// A write or an edit with a deadline waiting for another write of the
// same workspace answers timeout at its deadline and changes nothing.
func TestWriteWaitingForAWriteStopsAtItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		tool  string
		input map[string]any
	}{
		{"write", map[string]any{"path": "a", "content": "new"}},
		{"edit", map[string]any{"path": "a", "old": "old", "new": "new"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			f := newFixture(t, Options{})
			c, release := heldWorkspace(t, f)
			r := postWithin(t, f, c.Execute(tool(tc.tool), mustJSON(t, tc.input), envtest.Millis(200)), 5*time.Second)
			fails(t, r, envapi.CodeTimeout)
			release()
			time.Sleep(100 * time.Millisecond)
			data, err := os.ReadFile(filepath.Join(workspaceDir(t, f), "a"))
			if err != nil || string(data) != "old" {
				t.Errorf("a holds %q (%v) after the %s that answered timeout, want \"old\"", data, err, tc.tool)
			}
		})
	}
}

// Close stops a command waiting for a write: it answers cancelled at
// once, rather than Close waiting for the write.
func TestCloseStopsACommandWaitingForAWrite(t *testing.T) {
	f := newFixture(t, Options{})
	c, _ := heldWorkspace(t, f)
	answered := make(chan envapi.Receipt, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _, resp, err := envtest.Post(ctx, nil, f.url, "secret-token", c.Execute(tool("command"), mustJSON(t, sh("true")), nil))
		if err != nil || resp == nil {
			answered <- envapi.Receipt{}
			return
		}
		answered <- resp.Receipt
	}()
	time.Sleep(200 * time.Millisecond)
	go func() { _ = f.p.Close() }()
	select {
	case r := <-answered:
		fails(t, r, envapi.CodeCancelled)
	case <-time.After(5 * time.Second):
		t.Fatal("the command waiting for a write did not answer once Close began")
	}
}

// workspaceDir is the workspace directory of f's only binding.
func workspaceDir(t *testing.T, f *fixture) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(f.root, "workspaces"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("workspaces: %v %v", entries, err)
	}
	return filepath.Join(f.root, "workspaces", entries[0].Name())
}
