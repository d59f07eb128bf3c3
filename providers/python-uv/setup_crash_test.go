package pythonuv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// setupProviderEnv makes TestSetupProviderProcess serve the provider; its
// value is the uv executable and the project's directory, joined by a
// newline.
const setupProviderEnv = "PYTHONUV_TEST_SETUP_PROVIDER"

// slowSetup is a setup module that notes each run in the virtual
// environment (setup_attempts, and its pid in setup_pid) and, on its
// first run only, takes ten minutes.
const slowSetup = `import os, sys, time
path = os.path.join(sys.prefix, "setup_attempts")
first = not os.path.exists(path)
with open(path, "a", encoding="utf-8") as f:
    f.write("attempt\n")
with open(os.path.join(sys.prefix, "setup_pid"), "w", encoding="utf-8") as f:
    f.write(str(os.getpid()))
if first:
    time.sleep(600)
`

// TestSetupProviderProcess is the provider process of
// TestSetupInterruptedByACrashIsNotRunAgain, preparing its project at
// start; it is skipped otherwise.
func TestSetupProviderProcess(t *testing.T) {
	v := os.Getenv(setupProviderEnv)
	if v == "" {
		t.Skip("runs only as a child process")
	}
	uv, dir, _ := strings.Cut(v, "\n")
	os.Exit(Command(context.Background(), []string{"--listen", "127.0.0.1:0", "--no-auth", "--uv", uv, "--prepare",
		"--project", "slow=" + dir + ":echo:slow_setup"}, os.Stdout, os.Stderr))
}

// TestSetupInterruptedByACrashIsNotRunAgain: a provider killed while its
// project's setup module runs leaves the setup's outcome unknown (it may
// have done its work, or part of it). A provider started again does not
// run the setup a second time: the preparation fails with
// preparation_failed naming the setup and the file that records its
// start. Once the operator removed that file, a provider started again
// runs the setup.
func TestSetupInterruptedByACrashIsNotRunAgain(t *testing.T) {
	uv := uvPath(t)
	root := fixtures(t)
	dir := filepath.Join(root, "slow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"pyproject.toml", "uv.lock", "echo.py"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(readFile(t, filepath.Join(root, "plain", f))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "slow_setup.py"), []byte(slowSetup), 0o644); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(dir, ".venv")
	attempts := func() int {
		b, _ := os.ReadFile(filepath.Join(venv, "setup_attempts"))
		return strings.Count(string(b), "\n")
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(venv, "setup_pid")); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	child := exec.Command(os.Args[0], "-test.run=^TestSetupProviderProcess$")
	child.Env = append(os.Environ(), setupProviderEnv+"="+uv+"\n"+dir)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	deadline := time.Now().Add(2 * time.Minute)
	for attempts() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the setup never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The provider dies while its setup runs.
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	cfg := Config{UV: uv, Projects: map[string]Project{"slow": {Directory: dir, Setup: "slow_setup", Module: "echo"}}}
	prepare := func() error {
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		return p.Prepare(ctx, "slow")
	}
	err := prepare()
	if n := attempts(); n != 1 {
		t.Fatalf("the setup ran %d times; a provider started again ran it again though its first run's outcome is unknown (Prepare: %v)", n, err)
	}
	var e *envsdk.Error
	if !errors.As(err, &e) || e.Code != envapi.CodePreparationFailed {
		t.Fatalf("Prepare after a crash during the setup = %v, want preparation_failed", err)
	}
	started := filepath.Join(venv, setupStartedMarker)
	if !strings.Contains(e.Message, "slow_setup") || !strings.Contains(e.Message, started) {
		t.Fatalf("preparation_failed message %q does not name the setup and %s", e.Message, started)
	}

	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}
	if err := prepare(); err != nil {
		t.Fatalf("Prepare once the operator removed %s: %v", started, err)
	}
	if n := attempts(); n != 2 {
		t.Fatalf("the setup ran %d times, want once more after the operator cleared its start", n)
	}
}
