package proctree

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestReusedLeaderPidIsNotAMember checks that a process which took over the
// pid of a run's exited leader — and its process group — is left alone.
func TestReusedLeaderPidIsNotAMember(t *testing.T) {
	stranger := exec.Command("sleep", "30")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stranger.Process.Kill()
		stranger.Wait()
	}()
	start, err := startTime(stranger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if start == 0 {
		t.Skip("process start times are not readable here")
	}
	// A run whose leader had the stranger's pid but started earlier.
	run := &tree{leader: stranger.Process.Pid, start: start - 1, marker: []byte("BRAIN_PROCTREE_RUN=none"), self: os.Getpid(), born: time.Now()}
	live, err := run.members()
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range live {
		if pid == stranger.Process.Pid {
			t.Fatalf("members() = %v includes pid %d, which belongs to a process started after the run's leader exited", live, pid)
		}
	}
	// The same tree with the right start time does own it.
	run.start = start
	live, err = run.members()
	if err != nil || len(live) != 1 || live[0] != stranger.Process.Pid {
		t.Errorf("members() with the leader's own start time = %v, %v; want [%d]", live, err, stranger.Process.Pid)
	}
}
