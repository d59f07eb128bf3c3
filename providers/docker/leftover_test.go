package docker

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// leftoverCommand starts, through the provider at url, a command whose
// processes would run for a minute (its main process, a background child
// and a child that left the group with an empty environment) and waits
// until it has started; it answers the command's sequence.
func leftoverCommand(t *testing.T, r *killRig, url string) uint64 {
	t.Helper()
	seq := r.c.Reserve()
	g := r.brain.ToolGrant(r.c.Session, seq)
	go func() { // answered never: the provider dies
		_, _, _, _ = envtest.Post(r.ctx, nil, url, testToken, r.c.At(seq, envapi.Execute(tool(toolset.ToolCommand),
			mustJSON(toolset.CommandInput{Shell: "sleep 57 & setsid env -i sleep 58 & echo started; sleep 59"}), nil, &g)))
	}()
	if _, err := r.brain.WaitFor(r.ctx, func(call envtest.Call) bool {
		return call.Sequence == seq && call.Method == "emit" && strings.Contains(string(call.Input), "started")
	}); err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	return seq
}

// sleepers lists the processes of the leftover command still running in
// the container ctr.
func sleepers(t *testing.T, r *killRig, ctr string) []string {
	t.Helper()
	var out strings.Builder
	if _, err := runExec(r.ctx, r.cli, ctr, execSpec{
		Argv: []string{"ps", "-o", "args"}, User: DefaultUser, Dir: workspaceDir, Tag: "ps",
	}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "sleep 5") {
			left = append(left, l)
		}
	}
	return left
}

// A command that runs when its provider is killed with SIGKILL has nobody
// to enforce its deadline: the provider started again on the same state
// directory kills what is left of it before it serves.
func TestCommandsOfAKilledProviderAreKilledAtStart(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "leftover")
	child, url := startChild(t, r.stateDir, r.profiles)
	if rc := r.post(url, r.c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", rc)
	}
	leftoverCommand(t, r, url)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st, ok, err := r.probe.store.get(bindingKey(r.c))
	if err != nil || !ok || st.Phase != phaseReady {
		t.Fatalf("state after the kill = %+v %v %v", st, ok, err)
	}
	if left := sleepers(t, r, st.resourceName()); len(left) != 3 {
		t.Fatalf("after the kill the command runs as %q, want its 3 sleeps", left)
	}

	// The gc command finds the binding live and stops nothing of it.
	var out strings.Builder
	if code := Command(context.Background(), []string{"gc", "--state", r.stateDir}, &out, &out); code != 0 {
		t.Fatalf("gc = %d: %s", code, out.String())
	}
	if left := sleepers(t, r, st.resourceName()); len(left) != 3 {
		t.Fatalf("after gc the command runs as %q, want its 3 sleeps", left)
	}

	_, url = startChild(t, r.stateDir, r.profiles)
	if left := sleepers(t, r, st.resourceName()); len(left) != 0 {
		t.Fatalf("the restarted provider serves while the killed one's command runs on: %q", left)
	}
	// The binding still works, and the restarted provider's own commands
	// are left to it.
	rc := r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ok"}), nil))
	if rc.Type != envapi.ReceiptResult || !strings.Contains(string(rc.Output), "ok") {
		t.Fatalf("execute after restart = %+v", rc)
	}
	if rc := r.post(url, r.c.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", rc)
	}
}
