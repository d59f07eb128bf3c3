package docker

import (
	"testing"
)

// A command that kills the shells running it (its wrapper among them)
// answers its result, and what it started in the background does not
// outlive the call: the wrapper's own cleanup never ran.
func TestCommandThatKillsItsWrapperLeavesNothing(t *testing.T) {
	t.Parallel()
	h, c := allocated(t)
	out := h.shell(c, "sleep 296 & "+escapedTo("sleep")+"; env -i /bin/setsid /bin/sleep 295 & "+escapedTo("sleep")+"; killall -KILL sh; sleep 5")
	if out.ExitCode == 0 {
		t.Fatalf("command = %+v, want it killed", out)
	}
	h.noneLeft(c, "a child outlived the call whose wrapper it killed", "sleep 296", "sleep 295")
}

// escapedTo waits until the background process $! runs program comm.
func escapedTo(comm string) string {
	return `until [ "$(cat /proc/$!/comm)" = ` + comm + ` ]; do sleep 0.01; done`
}
