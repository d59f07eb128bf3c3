package proctree

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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

// TestOrphanStartingAProgramIsReaped: while a process is in execve,
// between the switch to the new program's memory and the setup of its
// stack, its environment reads as empty and its marker cannot be seen
// (a busy machine can hold it there for milliseconds). An orphan caught
// there is looked at again, not left running. The window is simulated for
// the orphan's first looks: its environment reads as empty and its stat
// shows no environment yet, as the kernel's do then.
func TestOrphanStartingAProgramIsReaped(t *testing.T) {
	// The owner is gone: a child of ours that exited and was reaped.
	owner := exec.Command("true")
	if err := owner.Run(); err != nil {
		t.Fatal(err)
	}
	const name = "PROCTREE_TEST_REAPED"
	orphan := exec.Command("sleep", "300")
	orphan.Env = []string{name + "=" + strconv.Itoa(owner.Process.Pid) + ".1.0123456789ab"}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	pid := orphan.Process.Pid
	t.Cleanup(func() { _ = orphan.Process.Kill(); _ = orphan.Wait() })
	// Once the orphan runs sleep its marker is readable.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if env, _ := procFile(pid, "environ"); bytes.Contains(env, []byte(name+"=")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan did not start")
		}
	}

	real := procFile
	t.Cleanup(func() { procFile = real })
	looks, starting := 0, false
	procFile = func(p int, file string) ([]byte, error) {
		b, err := real(p, file)
		if p != pid || err != nil {
			return b, err
		}
		switch file {
		case "environ":
			looks++
			if starting = looks <= 3; starting {
				return nil, nil
			}
		case "stat":
			if starting {
				return statWithoutEnvironment(t, b), nil
			}
		}
		return b, err
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := ReapOrphans(ctx, name); err != nil {
		t.Fatal(err)
	}
	if looks == 0 {
		t.Fatal("ReapOrphans never looked at the orphan")
	}
	if alive(pid) {
		t.Fatalf("the orphan %d, caught starting a program, is alive after ReapOrphans", pid)
	}
}

// statWithoutEnvironment is the stat line b with env_start and env_end
// (fields 50 and 51) zero.
func statWithoutEnvironment(t *testing.T, b []byte) []byte {
	t.Helper()
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+2:])
	if len(f) < 49 {
		t.Skipf("the kernel's stat has %d fields; env_end needs 49", len(f))
	}
	f[47], f[48] = []byte("0"), []byte("0")
	return append(append(append([]byte(nil), b[:i+2]...), bytes.Join(f, []byte(" "))...), '\n')
}

// TestReapWaitsForTheKilledToExit: ReapOrphans returns once the processes
// it killed have exited, not while they are still exiting (their
// environment already gone, their files and locks still held). An orphan
// holding much memory takes a while to exit: dd with a large block size,
// stuck writing it to a pipe nobody reads.
func TestReapWaitsForTheKilledToExit(t *testing.T) {
	owner := exec.Command("true")
	if err := owner.Run(); err != nil {
		t.Fatal(err)
	}
	const name = "PROCTREE_TEST_REAPED"
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	orphan := exec.Command("dd", "if=/dev/zero", "bs=256M", "count=1", "status=none")
	orphan.Env = []string{name + "=" + strconv.Itoa(owner.Process.Pid) + ".1.0123456789ab"}
	orphan.Stdout = w
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	pid := orphan.Process.Pid
	t.Cleanup(func() { _ = orphan.Process.Kill(); _ = orphan.Wait() })
	// Wait until dd holds its block (resident pages, field 24 of stat).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := procFile(pid, "stat")
		if err != nil {
			t.Fatal(err)
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
		if rss, _ := strconv.Atoi(string(f[21])); rss*os.Getpagesize() >= 250<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dd did not fill its block")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := ReapOrphans(ctx, name); err != nil {
		t.Fatal(err)
	}
	if s, err := readStat(pid); err == nil && !s.dead() {
		t.Fatalf("ReapOrphans returned while the orphan it killed was still exiting (state %c)", s.state)
	}
}
