package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// gcProcess runs "brain env docker gc" on stateDir in a process of its
// own and answers its report.
func gcProcess(t *testing.T, stateDir string, args ...string) GCReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProvider$")
	cmd.Env = append(os.Environ(), "BRAIN_DOCKER_CHILD_ARGS="+strings.Join(append([]string{"gc", "--state", stateDir}, args...), "\x1f"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("gc process: %v: %s", err, errOut.String())
	}
	var rep GCReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("gc process said %q: %v", out.String(), err)
	}
	return rep
}

// The gc command, run in a process of its own beside the provider that
// serves the state directory, leaves the resources of a binding where an
// execute runs, however old: the command runs to its end and answers its
// result. Once nothing runs there, a gc removes them.
func TestGCProcessLeavesARunningExecute(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	h := newHarness(t, stateDir)
	c := h.commands()
	ctr := h.allocated(c)

	running := startHeld(t, h, c)

	rep := gcProcess(t, stateDir, "--older-than", "1ns")
	if slices.Contains(rep.Containers, ctr) || slices.Contains(rep.Volumes, ctr) {
		t.Fatalf("a gc process removed %+v while an execute ran in %s", rep, ctr)
	}
	h.shell(c, "touch go")
	if out := h.commandOutput(<-running); out.ExitCode != 0 || out.Stdout != "finished\n" {
		t.Fatalf("the execute that ran during the gc answered %+v", out)
	}

	rep = gcProcess(t, stateDir, "--older-than", "1ns")
	if !slices.Contains(rep.Containers, ctr) || !slices.Contains(rep.Volumes, ctr) {
		t.Fatalf("a gc process with nothing running removed %+v, want %s", rep, ctr)
	}
	failure(t, h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "true"}), nil)), envapi.CodeResourceLost)
}

// An execute that arrives while a GC of another process removes the
// binding's resources (it holds the binding's lock of the state
// directory, as the gc command does) waits until the GC is done, runs
// nothing in what the GC removes, and answers resource_lost.
func TestExecuteWaitsForTheGCOfAnotherProcess(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	h := newHarness(t, stateDir)
	c := h.commands()
	ctr := h.allocated(c)

	release, err := newFence(h.p.store.dir, h.p.log).claim(bindingKey(c))
	if err != nil {
		t.Fatalf("claim the binding as a gc process does: %v", err)
	}
	answered := h.postAsync(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ran > ran"}), nil))
	select {
	case r := <-answered:
		release()
		t.Fatalf("an execute answered %+v while a gc held its binding", r)
	case <-time.After(time.Second):
	}
	if err := removeBinding(context.Background(), h.p.cli, h.p.instance, bindingKey(c)); err != nil {
		t.Fatalf("remove %s: %v", ctr, err)
	}
	release()
	failure(t, <-answered, envapi.CodeResourceLost)
}

// startHeld starts a command in c's binding that runs until a file "go"
// appears in the workspace, then prints "finished"; it answers once the
// command runs, with the channel of its answer.
func startHeld(t *testing.T, h *harness, c *envtest.Commands) <-chan envapi.Receipt {
	t.Helper()
	running := h.postAsync(c.Execute(tool(toolset.ToolCommand),
		mustJSON(toolset.CommandInput{Shell: "touch started; while [ ! -e go ]; do sleep 0.05; done; echo finished"}), nil))
	for give := time.Now().Add(time.Minute); ; {
		r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "started"}), nil))
		if r.Type == envapi.ReceiptResult {
			break
		}
		if time.Now().After(give) {
			t.Fatalf("the command never started: %+v", r)
		}
	}
	return running
}
