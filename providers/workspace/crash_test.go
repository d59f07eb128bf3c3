package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// providerProcessEnv makes TestProviderProcess serve the provider.
const providerProcessEnv = "WORKSPACE_TEST_PROVIDER_ROOT"

// dieInRemovalEnv makes the provider of TestProviderProcess kill itself
// part-way through the first removal of a workspace.
const dieInRemovalEnv = "WORKSPACE_TEST_DIE_IN_REMOVAL"

// TestProviderProcess is the provider process of
// TestCommandsOfAKilledProviderAreKilledOnRestart; it is skipped otherwise.
func TestProviderProcess(t *testing.T) {
	root := os.Getenv(providerProcessEnv)
	if root == "" {
		t.Skip("runs only as a child process")
	}
	if os.Getenv(dieInRemovalEnv) != "" {
		// The provider is killed part-way through removing a workspace:
		// one file is gone, the rest is still there.
		removeWorkspace = func(path string) error {
			if err := os.Remove(filepath.Join(path, "a")); err != nil {
				return err
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	os.Exit(Command(context.Background(), []string{"--listen", "127.0.0.1:0", "--root", root, "--no-auth"}, os.Stdout, os.Stderr))
}

// startProviderProcess serves a provider on root in a child process (see
// TestProviderProcess) and returns it with its URL; the test's end kills it.
func startProviderProcess(t *testing.T, root string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestProviderProcess$")
	child.Env = append(append(os.Environ(), providerProcessEnv+"="+root), env...)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	return child, listeningURL(t, out, nil)
}

// postTo sends cmd to the provider at url, which serves without a token,
// and returns the receipt.
func postTo(t *testing.T, url string, cmd envapi.Command) envapi.Receipt {
	t.Helper()
	_, body, resp, err := envtest.Post(t.Context(), nil, url, "", cmd)
	if err != nil || resp == nil {
		t.Fatalf("post %s: %v %s", cmd.Operation.Request.Type, err, body)
	}
	return resp.Receipt
}

func TestCommandsOfAKilledProviderAreKilledOnRestart(t *testing.T) {
	root := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	child, url := startProviderProcess(t, root)

	c := envtest.NewCommands("s1", "workspace")
	brain := envtest.NewBrain(t)
	c.Brain = brain
	if _, _, resp, err := envtest.Post(t.Context(), nil, url, "", c.Setup(nil)); err != nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %+v %v", resp, err)
	}
	// A command that writes its pid and runs on, plus a background child
	// that left the process group.
	line2 := "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $$ $! > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; exec sleep 300"
	go func() {
		_, _, _, _ = envtest.Post(context.Background(), nil, url, "", c.Execute(tool("command"), mustJSON(t, sh(line2)), nil))
	}()
	var pids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(pids) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if b, err := os.ReadFile(pidFile); err == nil {
			pids = pidsIn(t, string(b))
		}
	}
	if len(pids) < 2 {
		t.Fatal("the command did not start")
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			if survivor(t, pid) != "" {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	// The provider dies without a chance to clean up.
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	for _, pid := range pids {
		if survivor(t, pid) == "" {
			t.Fatalf("process %d died with the provider; the test cannot show anything", pid)
		}
	}

	// The provider restarted on the same root kills what the dead one
	// left running, and keeps the workspace.
	f := newFixture(t, Options{Root: root})
	until := time.Now().Add(5 * time.Second)
	for time.Now().Before(until) {
		left := 0
		for _, pid := range pids {
			if survivor(t, pid) != "" {
				left++
			}
		}
		if left == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		if s := survivor(t, pid); s != "" {
			t.Errorf("process %d of the killed provider still runs after the restart: %s", pid, s)
		}
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if !in.Allocated {
		t.Errorf("inspect after restart %+v", in)
	}
}
