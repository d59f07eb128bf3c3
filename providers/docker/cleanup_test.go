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
const escapeLine = "setsid sleep 300 & echo started"

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
