package proctree

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// ownerEnv makes TestOwnerProcess run a command tree and wait to be
// killed; its value is "scan" to run without a cgroup.
const ownerEnv = "PROCTREE_TEST_OWNER"

// TestOwnerProcess is the owner killed by TestRunsOfAKilledOwnerAreReaped;
// it is skipped otherwise.
func TestOwnerProcess(t *testing.T) {
	mode := os.Getenv(ownerEnv)
	if mode == "" {
		t.Skip("runs only as a child process")
	}
	scanOnly = mode == "scan"
	// The leader, a child in a session of its own and a child that
	// cleared its environment (only a cgroup catches that one).
	script := `setsid sh -c 'echo $$; exec sleep 300' & echo $$; sleep 300`
	if mode == "cgroup" {
		script = `env -i /bin/sh -c 'echo $$; exec sleep 300' & ` + script
	}
	s := sh(script)
	s.Stdout = os.Stdout
	_, err := Run(context.Background(), s)
	fmt.Fprintln(os.Stderr, "owner: run ended:", err)
	os.Exit(1)
}

func TestRunsOfAKilledOwnerAreReaped(t *testing.T) {
	modes := map[string]int{"scan": 2}
	if cgroupBase() != "" {
		modes["cgroup"] = 3
	}
	for mode, want := range modes {
		t.Run(mode, func(t *testing.T) {
			owner := exec.Command(os.Args[0], "-test.run=^TestOwnerProcess$")
			owner.Env = append(os.Environ(), ownerEnv+"="+mode)
			out, err := owner.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			owner.Stderr = os.Stderr
			if err := owner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
			w := newPidWatcher(want)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					_, _ = w.Write(append(sc.Bytes(), '\n'))
				}
			}()
			select {
			case <-w.ready:
			case <-time.After(10 * time.Second):
				t.Fatalf("the owner's command printed %v", w.get())
			}
			pids := w.get()
			t.Cleanup(func() {
				for _, pid := range pids {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			// A live owner's runs are not touched.
			if err := ReapOrphans(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("process %d of a live owner was killed", pid)
				}
			}
			if err := owner.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = owner.Wait()
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("process %d died with its owner; the test shows nothing", pid)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := ReapOrphans(ctx, ""); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("process %d of the killed owner is alive after ReapOrphans", pid)
				}
			}
		})
	}
}
