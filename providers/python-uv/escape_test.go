package pythonuv

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// detachModule starts a process in a session of its own (as a tool that
// starts a server or a browser does) and answers its pid; given
// {"pid_file": PATH} it records the pid there instead and sleeps.
const detachModule = `import json
import os
import subprocess
import sys
import time

req = json.load(sys.stdin)
child = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if "pid_file" in req:
    with open(req["pid_file"] + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(child.pid))
    os.rename(req["pid_file"] + ".tmp", req["pid_file"])
    time.sleep(600)
json.dump({"pid": child.pid}, sys.stdout)
`

// TestInvocationKillsProcessesThatLeftTheGroup: a process the module
// started in a session of its own does not outlive the invocation,
// whether the module ends on its own or passes its deadline.
func TestInvocationKillsProcessesThatLeftTheGroup(t *testing.T) {
	r := newRig(t, func(cfg *Config) {
		plain := cfg.Projects["plain"].Directory
		cfg.Projects["detach"] = Project{Directory: plain, Module: "detach"}
		if err := os.WriteFile(filepath.Join(plain, "detach.py"), []byte(detachModule), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	s := r.attach("s")
	warm(t, r, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	rc := r.post(s.Execute(impl("detach"), json.RawMessage(`{}`), envtest.Millis(60_000)))
	var out struct{ PID int }
	if rc.Type != envapi.ReceiptResult || json.Unmarshal(rc.Output, &out) != nil || out.PID <= 0 {
		t.Fatalf("detach: %s", describe(rc))
	}
	pids := t.TempDir()
	t.Cleanup(func() { killHolders(pids) })
	if err := os.WriteFile(filepath.Join(pids, "detached"), []byte(strconv.Itoa(out.PID)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitGone(ctx, out.PID); err != nil {
		t.Errorf("the process %d the module started in its own session outlived the invocation", out.PID)
	}

	pidFile := filepath.Join(pids, "holder")
	input, _ := json.Marshal(map[string]string{"pid_file": pidFile})
	rc = r.post(s.Execute(impl("detach"), input, envtest.Millis(3000)))
	wantFailure(t, rc, envapi.CodeTimeout)
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the module did not start its process before the deadline: %v", err)
	}
	holder, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err := waitGone(ctx, holder); err != nil {
		t.Errorf("the process %d the module started in its own session outlived the deadline", holder)
	}
}
