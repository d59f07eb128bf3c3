package docker

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A cancel that comes after its command ended finds the command's group
// file, if one was left, naming a wrapper whose pid the kernel has since
// given to another process (the container's pids wrap around). The start
// of that process is not the command's: the cancel kills no untagged
// orphan of a call that runs on, and no group but the command's own.
func TestLateCancelIgnoresReusedWrapperPid(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
	// The running call starts a daemon that clears its environment and
	// whose parent ends at once (an untagged orphan), then waits. No other
	// call runs meanwhile: its end would take the daemon for its own.
	cmd := c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
		Shell: "(env -i /bin/setsid /bin/sleep 304 >/dev/null 2>&1 &); until ps -o args | grep -q '^/bin/sleep 304'; do sleep 0.01; done; " +
			"echo started $PPID; while [ ! -e /tmp/cancelled ]; do sleep 0.02; done; ps -o args | grep -c '^/bin/sleep 304'"}), nil)
	running := make(chan envapi.Receipt, 1)
	go func() { running <- h.post(cmd) }()
	emit, err := h.brain.WaitFor(t.Context(), func(call envtest.Call) bool {
		return call.Sequence == cmd.Operation.Sequence && call.Method == "emit" && strings.Contains(string(call.Input), "started")
	})
	if err != nil {
		t.Fatalf("the running call never started: %v", err)
	}
	wrapper := regexp.MustCompile(`started (\d+)`).FindStringSubmatch(string(emit.Input))
	if wrapper == nil {
		t.Fatalf("emit = %s", emit.Input)
	}
	// The group file of a command that ended long ago, whose wrapper's pid
	// now belongs to the running call's wrapper, and whose group is gone.
	ended := c.Reserve()
	if out := h.shell(c, fmt.Sprintf("echo 4194301 %s >/tmp/.brain-exec-%d", wrapper[1], ended)); out.ExitCode != 0 {
		t.Fatalf("write group file = %+v", out)
	}
	if rc := h.post(c.Cancel(ended)); rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel = %+v", rc)
	}
	if out := h.shell(c, "touch /tmp/cancelled"); out.ExitCode != 0 {
		t.Fatalf("touch = %+v", out)
	}
	out := h.commandOutput(<-running)
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout[strings.Index(out.Stdout, "\n")+1:]) != "1" {
		t.Fatalf("the cancel of an ended command killed a running call's daemon: %+v", out)
	}
	h.noneLeft(c, "the daemon outlived its call", "sleep 304")
}

// A command stopped by its deadline leaves nothing of it in the
// container, not even the file its wrapper recorded its group in.
func TestStopRemovesGroupFile(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
	cmd := c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: "echo started; sleep 297"}), envtest.Millis(1000))
	failure(t, h.post(cmd), envapi.CodeTimeout)
	file := fmt.Sprintf(".brain-exec-%d\n", cmd.Operation.Sequence)
	if out := h.shell(c, "ls -a /tmp"); strings.Contains(out.Stdout, file) {
		t.Fatalf("the stopped command left its group file:\n%s", out.Stdout)
	}
}

// A provider started again kills the commands an earlier one left, but
// not a daemon that an exec it did not start runs, though a group file
// left by an earlier command names the daemon's pid as its wrapper's (the
// kernel gave the ended wrapper's pid to the daemon).
func TestLeftoverKillIgnoresReusedWrapperPid(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
	st, ok, err := h.p.store.get(bindingKey(c))
	if err != nil || !ok {
		t.Fatalf("state: %v %v", ok, err)
	}
	ctr := st.resourceName()
	ctx := t.Context()
	// Started by the container's owner, not through the provider: no tag,
	// and its parent ends at once.
	if _, _, err := runKillExec(ctx, h.p.cli, ctr, DefaultUser, "/bin/sh", "-c",
		"(env -i /bin/setsid /bin/sleep 305 >/dev/null 2>&1 </dev/null &); until pidof sleep >/dev/null; do sleep 0.01; done; "+
			"for p in $(pidof sleep); do grep -q 305 /proc/$p/cmdline && echo 4194301 $p >/tmp/.brain-exec-7; done"); err != nil {
		t.Fatal(err)
	}
	if err := h.p.KillLeftovers(ctx); err != nil {
		t.Fatalf("KillLeftovers: %v", err)
	}
	if ps := h.processes(c); !strings.Contains(ps, "sleep 305") {
		t.Fatalf("the kill of leftovers took a daemon it did not start for a command's:\n%s", ps)
	}
}
