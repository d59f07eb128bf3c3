package pythonuv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// killHolders kills the processes whose pids the stuck module recorded in
// the files of dir.
func killHolders(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// An invocation that passes its deadline while a process that cannot be
// killed keeps its output open answers timeout (the first cause) with the
// project's details and the cleanup failure in details.cleanup_error,
// once the kill and the output drain bounds have passed.
func TestDeadlineKeepsCleanupEvidence(t *testing.T) {
	fz := newFreezer(t)
	r := newRig(t, func(cfg *Config) {
		cfg.Projects["stuck"] = Project{Directory: cfg.Projects["plain"].Directory, Module: "stuck"}
	})
	s := r.attach("s")
	warm(t, r, s)
	pids := t.TempDir()
	t.Cleanup(func() { killHolders(pids) })
	pidFile := filepath.Join(pids, "holder")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile, "freezer": fz})

	const deadline = 3000
	start := time.Now()
	rc := r.post(s.Execute(impl("stuck"), input, envtest.Millis(deadline)))
	took := time.Since(start)
	d := wantFailure(t, rc, envapi.CodeTimeout)
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("the holder process was not started before the deadline: %v", err)
	}
	ce, _ := d["cleanup_error"].(string)
	if ce == "" {
		t.Fatalf("timeout details %v: no cleanup_error", d)
	}
	if !strings.Contains(ce, "still alive") {
		t.Fatalf("cleanup_error %q does not report the process that survived the kill", ce)
	}
	if d["project"] != "stuck" {
		t.Fatalf("timeout details %v lost the project's details", d)
	}
	if !strings.Contains(rc.Message, "deadline") {
		t.Fatalf("message %q does not name the deadline", rc.Message)
	}
	// proctree's kill bound (2.5 s) and its wait for the leader (0.5 s).
	const killBound = 3 * time.Second
	if took < deadline*time.Millisecond || took > deadline*time.Millisecond+killBound+drainGrace+3*time.Second {
		t.Fatalf("answered after %s for a %d ms deadline", took, deadline)
	}
}

// A module that ends by itself but leaves behind a process that cannot
// be killed has its answer carry the cleanup failure: a failure keeps its
// own code (the first cause) with details.cleanup_error beside the
// project's evidence, and a result becomes cleanup_failed holding the
// output in its details, since the invocation's processes outlive it.
func TestLeftoverThatCannotBeKilledIsReported(t *testing.T) {
	r := newRig(t, func(cfg *Config) {
		cfg.Projects["stuck"] = Project{Directory: cfg.Projects["plain"].Directory, Module: "stuck"}
	})
	s := r.attach("s")
	warm(t, r, s)
	for _, c := range []struct {
		name, stdout string
		exit         int
		code         string
	}{
		{"exit status", "", 3, envapi.CodeExecutionFailed},
		{"not JSON", "not json", 0, envapi.CodeInvalidOutput},
		{"result", `{"done":true}`, 0, envapi.CodeCleanupFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			fz := newFreezer(t)
			pids := t.TempDir()
			t.Cleanup(func() { killHolders(pids) })
			input, _ := json.Marshal(map[string]any{"pid_file": filepath.Join(pids, "holder"), "freezer": fz, "exit": c.exit, "stdout": c.stdout})
			d := wantFailure(t, r.post(s.Execute(impl("stuck"), input, envtest.Millis(120_000))), c.code)
			if ce, _ := d["cleanup_error"].(string); !strings.Contains(ce, "still alive") {
				t.Fatalf("details %v: cleanup_error does not report the process that survived the kill", d)
			}
			if d["project"] != "stuck" {
				t.Fatalf("details %v lost the project's details", d)
			}
			switch c.code {
			case envapi.CodeExecutionFailed:
				if d["exit_code"] != float64(3) {
					t.Fatalf("details %v: want exit_code 3", d)
				}
			case envapi.CodeInvalidOutput:
				if d["stdout"] != "not json" {
					t.Fatalf("details %v: want the output", d)
				}
			case envapi.CodeCleanupFailed:
				if out, _ := json.Marshal(d["output"]); string(out) != `{"done":true}` {
					t.Fatalf("details %v: want the result as output", d)
				}
			}
		})
	}
}
