package docker

import (
	"context"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// killedWithLeftovers runs a leftover command in a provider that is then
// killed, pauses the binding's container and starts the provider again
// with restart: it answers the restarted provider's URL, the container
// and the leftover command's sequence.
func killedWithLeftovers(t *testing.T, r *killRig, restart func() string) (url, ctr string, seq uint64) {
	t.Helper()
	child, url := startChild(t, r.stateDir, r.profiles)
	if rc := r.post(url, r.c.Setup(nil)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup = %+v", rc)
	}
	seq = leftoverCommand(t, r, url)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st, ok, err := r.probe.store.get(bindingKey(r.c))
	if err != nil || !ok {
		t.Fatalf("state after the kill = %+v %v %v", st, ok, err)
	}
	ctr = st.resourceName()
	if left := sleepers(t, r, ctr); len(left) != 3 {
		t.Fatalf("after the kill the command runs as %q, want its 3 sleeps", left)
	}
	if err := r.cli.ContainerPause(r.ctx, ctr); err != nil {
		t.Fatal(err)
	}
	return restart(), ctr, seq
}

// restartChild starts the provider again as Command does, in a child
// process (KillLeftovers runs before it serves).
func restartChild(t *testing.T, r *killRig) func() string {
	return func() string {
		_, url := startChild(t, r.stateDir, r.profiles)
		return url
	}
}

// restartNew starts the provider again in this process with New alone
// (KillLeftovers never runs).
func restartNew(t *testing.T, r *killRig) func() string {
	return func() string {
		p, err := New(Config{Profiles: Profiles{"default": {Image: r.image}}, StateDir: r.stateDir, Client: r.cli})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(p.Handler(testToken))
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

// A container paused when its provider starts again keeps the commands of
// the killed provider (nothing runs in it to kill them); the execute that
// resumes it kills them first, so they never run on after the restart.
func TestPausedLeftoversAreKilledOnResume(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "paused-resume")
	url, ctr, _ := killedWithLeftovers(t, r, restartChild(t, r))
	rc := r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ok"}), nil))
	if rc.Type != envapi.ReceiptResult || !strings.Contains(string(rc.Output), "ok") {
		t.Fatalf("execute on the paused container = %+v", rc)
	}
	if left := sleepers(t, r, ctr); len(left) != 0 {
		t.Fatalf("the killed provider's command runs on in the resumed container: %q", left)
	}
	// The restarted provider's own commands run as before.
	long := make(chan envapi.Receipt, 1)
	go func() {
		long <- r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "sleep 0.5; echo done"}), nil))
	}()
	if rc := r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ok"}), nil)); rc.Type != envapi.ReceiptResult {
		t.Fatalf("execute = %+v", rc)
	}
	if rc := <-long; rc.Type != envapi.ReceiptResult || !strings.Contains(string(rc.Output), "done") {
		t.Fatalf("execute beside another = %+v", rc)
	}
	if rc := r.post(url, r.c.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", rc)
	}
}

// A cancel, after a restart, of a command that runs in a paused container
// stops it, whether KillLeftovers skipped the container or never ran:
// accepted means the command never runs again, also once the container
// is resumed out of band.
func TestCancelInPausedContainerKills(t *testing.T) {
	t.Parallel()
	for _, restart := range []string{"command", "new"} {
		t.Run(restart, func(t *testing.T) {
			t.Parallel()
			testCancelInPausedContainer(t, restart)
		})
	}
}

func testCancelInPausedContainer(t *testing.T, restart string) {
	r := newKillRig(t, "paused-cancel-"+restart)
	how := restartChild(t, r)
	if restart == "new" {
		how = restartNew(t, r)
	}
	url, ctr, seq := killedWithLeftovers(t, r, how)
	if rc := r.post(url, r.c.Cancel(seq)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel = %+v", rc)
	}
	if err := r.cli.ContainerUnpause(context.Background(), ctr); err != nil && !strings.Contains(err.Error(), "not paused") {
		t.Fatal(err)
	}
	if left := sleepers(t, r, ctr); len(left) != 0 {
		t.Fatalf("the cancelled command runs on once the container is resumed: %q", left)
	}
	if rc := r.post(url, r.c.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", rc)
	}
}

// An execute whose deadline passes while it kills the commands a killed
// provider left in a container paused at the restart says its command
// never started, and does not take them for killed: the next execute
// kills them before its command runs.
func TestLeftoverKillCutShortIsDoneByTheNextExecute(t *testing.T) {
	t.Parallel()
	r := newKillRig(t, "paused-cut-short")
	var release func()
	url, ctr, _ := killedWithLeftovers(t, r, func() string {
		// Every exec is held until release: the kill of the leftovers
		// cannot reach the container.
		var host string
		host, _, release = gatedEngine(t, r.cli.DaemonHost(), "/exec")
		p, err := New(Config{Profiles: Profiles{"default": {Image: r.image}}, StateDir: r.stateDir, Client: relayClient(t, host)})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.KillLeftovers(r.ctx); err != nil {
			t.Fatalf("KillLeftovers: %v", err)
		}
		srv := httptest.NewServer(p.Handler(testToken))
		t.Cleanup(srv.Close)
		return srv.URL
	})
	short := int64(2000)
	rc := r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ok"}), &short))
	if rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeTimeout || !strings.Contains(rc.Message, "never started") {
		t.Errorf("execute whose deadline passed while the leftovers were killed = %+v; want timeout saying its command never started", rc)
	}
	release()
	rc = r.post(url, r.c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo ok"}), nil))
	if rc.Type != envapi.ReceiptResult || !strings.Contains(string(rc.Output), "ok") {
		t.Fatalf("execute = %+v", rc)
	}
	if left := sleepers(t, r, ctr); len(left) != 0 {
		t.Errorf("the killed provider's command runs on once an execute has run: %q", left)
	}
	if rc := r.post(url, r.c.Teardown()); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown = %+v", rc)
	}
}
