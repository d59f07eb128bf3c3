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

// untaggedLine starts a process that leaves its command's process group
// and clears its environment (it carries no tag), then ends its parent:
// the process is an orphan adopted by the container's init.
const untaggedLine = "env -i /bin/setsid /bin/sleep 301 & " + escaped + "; echo started"

// foreignTagLine starts a process that leaves its command's process group
// and carries a tag that no command has, then ends its parent.
const foreignTagLine = "env BRAIN_EXEC_TAG=none /bin/setsid /bin/sleep 302 & " + escaped + "; echo started"

// escapes are the ways a background child leaves its command's group: one
// that keeps the command's tag, one that clears its environment too, and
// one that gives itself a tag of no command.
var escapes = []struct{ name, line, proc string }{
	{"tagged", escapeLine, "sleep 300"},
	{"untagged", untaggedLine, "sleep 301"},
	{"foreign tag", foreignTagLine, "sleep 302"},
}

// noneLeft fails the test if a process whose arguments hold one of
// procs runs in c's container, and unless the container still runs
// commands (its keep-alive, an orphan of no call, is left alone).
func (h *harness) noneLeft(c *envtest.Commands, why string, procs ...string) {
	h.t.Helper()
	ps := h.processes(c)
	for _, p := range procs {
		if strings.Contains(ps, p) {
			h.t.Fatalf("%s:\n%s", why, ps)
		}
	}
	if out := h.shell(c, "echo alive"); out.Stdout != "alive\n" {
		h.t.Fatalf("the container no longer runs commands: %+v", out)
	}
}

// allocated answers a harness with a binding set up whose container is
// allocated (its first command ran).
func allocated(t *testing.T) (*harness, *envtest.Commands) {
	t.Helper()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	if out := h.shell(c, "true"); out.ExitCode != 0 {
		t.Fatalf("first execute = %+v", out)
	}
	return h, c
}

// A command that passes its deadline while a process it started in a
// session of its own holds the output stream answers timeout, and that
// process, found by the tag it inherited or as an orphan without one, is
// killed with the rest.
func TestDeadlineKillsEscapedProcesses(t *testing.T) {
	t.Parallel()
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			// Allocated first, so that the deadline runs on the command alone.
			h, c := allocated(t)
			const deadline = 1500
			start := time.Now()
			r := h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: e.line + "; sleep 299"}), envtest.Millis(deadline)))
			took := time.Since(start)
			failure(t, r, envapi.CodeTimeout)
			if len(r.Details) > 0 && strings.Contains(string(r.Details), "cleanup_error") {
				t.Fatalf("timeout with a failed cleanup: %s", r.Details)
			}
			h.noneLeft(c, "a process of the stopped command still runs", e.proc, "sleep 299")
			if took < deadline*time.Millisecond || took > deadline*time.Millisecond+killBudget+time.Second {
				t.Fatalf("answered after %s for a %d ms deadline", took, deadline)
			}
		})
	}
}

// A command that ends while a process it started in a session of its own
// still runs answers its result, and that process does not outlive the
// call.
func TestEscapedChildDoesNotOutliveItsCall(t *testing.T) {
	t.Parallel()
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "")
			c := h.commands()
			h.setup(c, "")
			out := h.shell(c, e.line)
			if out.ExitCode != 0 || out.Stdout != "started\n" {
				t.Fatalf("command = %+v", out)
			}
			h.noneLeft(c, "a child outlived its call", e.proc)
		})
	}
}

// The end of one call leaves another call's processes alone: a daemon
// that the other call started after this one began (an orphan, its
// parent ended, carrying the other call's tag) runs on until its own
// call ends.
func TestCallEndSparesAnotherCallsOrphan(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
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

// A stop kills the orphans without a tag that the command started even
// when the wrapper could not record its process group (a command filled
// the container's /tmp, where the wrapper writes it): the kill takes the
// start of the command from its tagged processes, and keeps it for every
// later round, once those are dead.
func TestStopKillsUntaggedOrphansWithoutGroupFile(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"deadline", "cancel"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			h, c := allocated(t)
			// The last page is the one this call's own group file took:
			// it is freed, then filled too.
			if out := h.shell(c, "dd if=/dev/zero of=/tmp/fill bs=4k 2>/dev/null; : >/tmp/.brain-exec-$BRAIN_EXEC_TAG; "+
				"dd if=/dev/zero of=/tmp/fill2 bs=4k 2>/dev/null; echo x >/tmp/probe || echo full"); out.Stdout != "full\n" {
				t.Fatalf("filling /tmp = %+v", out)
			}
			line := untaggedLine + "; sleep 299"
			var r envapi.Receipt
			if stop == "deadline" {
				r = h.post(c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: line}), envtest.Millis(1500)))
				failure(t, r, envapi.CodeTimeout)
			} else {
				cmd := c.Execute(tool(toolset.ToolCommand), mustJSON(toolset.CommandInput{Shell: line}), nil)
				done := make(chan envapi.Receipt, 1)
				go func() { done <- h.post(cmd) }()
				for !strings.Contains(h.processes(c), "sleep 299") {
					time.Sleep(20 * time.Millisecond)
				}
				if rc := h.post(c.Cancel(cmd.Operation.Sequence)); rc.Type != envapi.ReceiptAccepted {
					t.Fatalf("cancel = %+v", rc)
				}
				r = <-done
				failure(t, r, envapi.CodeCancelled)
			}
			if strings.Contains(string(r.Details), "cleanup_error") {
				t.Fatalf("stop with a failed cleanup: %s", r.Details)
			}
			if out := h.shell(c, "rm /tmp/fill /tmp/fill2"); out.ExitCode != 0 {
				t.Fatalf("rm = %+v", out)
			}
			h.noneLeft(c, "a process of the stopped command still runs", "sleep 301", "sleep 299")
		})
	}
}
