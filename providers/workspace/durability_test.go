package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

func TestRestartKeepsWorkspaces(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"label":"kept"}`))))
	ok(t, f.exec(c, "write", map[string]string{"path": "notes/a.txt", "content": "before restart"}, nil), nil)
	idle := f.commands("s2")
	accepted(t, f.post(idle.Setup(nil)))

	g := f.restart(Options{})
	var rd toolset.ReadOutput
	ok(t, g.exec(c, "read", map[string]string{"path": "notes/a.txt"}, nil), &rd)
	if rd.Content != "before restart" {
		t.Errorf("after restart read %+v", rd)
	}
	var in InspectOutput
	ok(t, g.post(c.Call("inspect", nil)), &in)
	if !in.Allocated || in.Label != "kept" || in.Files != 2 {
		t.Errorf("inspect after restart %+v", in)
	}
	fails(t, g.post(c.Setup(nil)), envapi.CodeAlreadyExists)
	ok(t, g.post(idle.Call("inspect", nil)), &in)
	if in.Allocated || in.Phase != phaseNew {
		t.Errorf("idle binding after restart %+v", in)
	}
	if g.p.allocations.Load() != 0 {
		t.Errorf("restart allocated %d workspaces", g.p.allocations.Load())
	}
	accepted(t, g.post(c.Teardown()))
	h := g.restart(Options{})
	fails(t, h.exec(c, "read", map[string]string{"path": "notes/a.txt"}, nil), envapi.CodeUnavailable)
}

func TestWorkspaceDeletedOutOfBand(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("dirs %v", dirs)
	}
	dir := filepath.Join(f.root, "workspaces", dirs[0])
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
	fails(t, f.exec(c, "command", sh("true"), nil), envapi.CodeResourceLost)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the lost workspace was re-created: %v", err)
	}
	// Reported once through the reporter, as a resource observation.
	reports := f.brain.Filter(func(cl envtest.Call) bool { return cl.Kind == envtest.KindReporter })
	if len(reports) != 1 {
		t.Fatalf("%d reporter calls, want 1: %v", len(reports), reports)
	}
	var ev envapi.ReporterEvent
	if err := json.Unmarshal(reports[0].Input, &ev); err != nil || ev.Output == nil {
		t.Fatalf("reporter body %s: %v", reports[0].Input, err)
	}
	if o := ev.Output.Observation; o.Scope != envapi.ScopeResource || o.Code != envapi.CodeResourceLost || o.Resource != "workspace" {
		t.Errorf("observation %+v", o)
	}
	// The loss survives a restart, and reset allocates a fresh workspace.
	g := f.restart(Options{})
	fails(t, g.exec(c, "list", map[string]any{}, nil), envapi.CodeResourceLost)
	var in InspectOutput
	ok(t, g.post(c.Call("inspect", nil)), &in)
	if in.Phase != phaseLost || in.Allocated {
		t.Errorf("inspect %+v", in)
	}
	var reset struct {
		Reset         bool
		PreviousPhase string `json:"previous_phase"`
	}
	ok(t, g.post(c.Call("reset", nil)), &reset)
	if !reset.Reset || reset.PreviousPhase != phaseLost {
		t.Errorf("reset %+v", reset)
	}
	fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeNotFound)
}

func TestWorkspaceReplacedOutOfBand(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
	dir := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := f.exec(c, "read", map[string]string{"path": "a"}, nil)
	fails(t, r, envapi.CodeResourceLost)
	if !strings.Contains(r.Message, "replaced") {
		t.Errorf("message %q", r.Message)
	}
}

func TestFailedAllocationIsSticky(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ws := filepath.Join(f.root, "workspaces")
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws, nil, 0o600); err != nil { // not a directory: mkdir fails
		t.Fatal(err)
	}
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeAllocationFailed)
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	// Repaired, but the failure stays until reset — also across a restart.
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeAllocationFailed)
	g := f.restart(Options{})
	fails(t, g.exec(c, "list", map[string]any{}, nil), envapi.CodeAllocationFailed)
	if n := g.p.allocations.Load(); n != 0 {
		t.Errorf("%d allocations while failed", n)
	}
	ok(t, g.post(c.Call("reset", nil)), nil)
	ok(t, g.exec(c, "list", map[string]any{}, nil), nil)
}

func TestResetBusyWhileExecuting(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	cmd := c.Execute(tool("command"), mustJSON(t, sh("echo started; sleep 30")), nil)
	seq := cmd.Operation.Sequence
	done := make(chan envapi.Receipt, 1)
	go func() { done <- f.post(cmd) }()
	if _, err := f.brain.WaitFor(t.Context(), envtest.Execution("s1", seq, envapi.MethodEmit)); err != nil {
		t.Fatal(err)
	}
	fails(t, f.post(c.Call("reset", nil)), envapi.CodeBusy)
	fails(t, f.post(c.Detach()), envapi.CodeBusy)
	fails(t, f.post(c.Teardown()), envapi.CodeBusy)
	accepted(t, f.post(c.Cancel(seq)))
	fails(t, <-done, envapi.CodeCancelled)
	ok(t, f.post(c.Call("reset", nil)), nil)
	accepted(t, f.post(c.Teardown()))
}
