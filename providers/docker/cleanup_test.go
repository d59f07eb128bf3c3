package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// escapeLine starts a process in a session of its own, out of reach of the
// command's group kill, that keeps the output stream open.
const escapeLine = "setsid sleep 300 & " + escaped + "; echo started"

// escaped waits until the background process $! runs its last program,
// sleep: it has left the group (and cleared its environment) by then.
const escaped = `until [ "$(cat /proc/$!/comm)" = sleep ]; do sleep 0.01; done`

// A command that passes its deadline while a process it started in a
// session of its own holds the output stream answers timeout, and that
// process, found by the tag it inherited, is killed with the rest.
func TestDeadlineKillsEscapedProcesses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	// Allocated first, so that the deadline runs on the command alone.
	if out := h.shell(c, "true"); out.ExitCode != 0 {
		t.Fatalf("first execute = %+v", out)
	}
	const deadline = 1500
	start := time.Now()
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: escapeLine + "; sleep 300"}), envtest.Millis(deadline)))
	took := time.Since(start)
	failure(t, r, envapi.CodeTimeout)
	if len(r.Details) > 0 && strings.Contains(string(r.Details), "cleanup_error") {
		t.Fatalf("timeout with a failed cleanup: %s", r.Details)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 300") {
		t.Fatalf("a process of the stopped command still runs:\n%s", ps)
	}
	if took < deadline*time.Millisecond || took > deadline*time.Millisecond+killBudget+time.Second {
		t.Fatalf("answered after %s for a %d ms deadline", took, deadline)
	}
}

// A command that ends while a process it started in a session of its own
// still runs answers its result, and that process does not outlive the
// call.
func TestEscapedChildDoesNotOutliveItsCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	out := h.shell(c, escapeLine)
	if out.ExitCode != 0 || out.Stdout != "started\n" {
		t.Fatalf("command = %+v", out)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 300") {
		t.Fatalf("a child outlived its call:\n%s", ps)
	}
}

// untaggedLine starts a process that leaves its command's process group
// and clears its environment (it carries no tag), then ends its parent:
// the process is an orphan adopted by the container's init.
const untaggedLine = "env -i /bin/setsid /bin/sleep 301 & " + escaped + "; echo started"

// A process that escaped its command's group and cleared its environment
// does not outlive the call either: neither when the command ends with a
// result nor when the call is stopped at its deadline. The container's
// keep-alive, an orphan of no call, is left alone: later calls still run.
func TestUntaggedOrphanDoesNotOutliveItsCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	out := h.shell(c, untaggedLine)
	if out.ExitCode != 0 || out.Stdout != "started\n" {
		t.Fatalf("command = %+v", out)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 301") {
		t.Fatalf("an untagged orphan outlived its call:\n%s", ps)
	}
	r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: untaggedLine + "; sleep 300"}), envtest.Millis(1500)))
	failure(t, r, envapi.CodeTimeout)
	if len(r.Details) > 0 && strings.Contains(string(r.Details), "cleanup_error") {
		t.Fatalf("timeout with a failed cleanup: %s", r.Details)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 301") || strings.Contains(ps, "sleep 300") {
		t.Fatalf("a process of the stopped command still runs:\n%s", ps)
	}
	if out := h.shell(c, "echo alive"); out.Stdout != "alive\n" {
		t.Fatalf("the container no longer runs commands: %+v", out)
	}
}

// The end of one call leaves another call's processes alone: a daemon
// that the other call started after this one began (an orphan, its
// parent ended, carrying the other call's tag) runs on until its own
// call ends.
func TestCallEndSparesAnotherCallsOrphan(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "true"); out.ExitCode != 0 {
		t.Fatalf("first execute = %+v", out)
	}
	first := make(chan envapi.Receipt, 1)
	go func() {
		first <- h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
			Shell: "while [ ! -e /tmp/daemon-started ]; do sleep 0.02; done; echo first"}), nil))
	}()
	for !strings.Contains(h.processes(c), "daemon-started") {
		time.Sleep(20 * time.Millisecond)
	}
	second := make(chan envapi.Receipt, 1)
	go func() {
		// The daemon's parent ends at once; the call looks for the daemon
		// once the first call has ended.
		second <- h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{
			Shell: "(setsid /bin/sleep 303 &); until ps -o args | grep -q '^/bin/sleep 303'; do sleep 0.01; done; touch /tmp/daemon-started; " +
				"while [ ! -e /tmp/first-ended ]; do sleep 0.02; done; ps -o args | grep -c '^/bin/sleep 303'"}), nil))
	}()
	if out := h.commandOutput(<-first); out.Stdout != "first\n" {
		t.Fatalf("first call = %+v", out)
	}
	if out := h.shell(c, "touch /tmp/first-ended"); out.ExitCode != 0 {
		t.Fatalf("touch = %+v", out)
	}
	out := h.commandOutput(<-second)
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "1" {
		t.Fatalf("the end of the first call killed the second call's daemon: %+v", out)
	}
	if ps := h.processes(c); strings.Contains(ps, "sleep 303") {
		t.Fatalf("the daemon outlived its own call:\n%s", ps)
	}
}
