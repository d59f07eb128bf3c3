package pythonuv

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// exclusiveSetup records each attempt, refuses to run beside another
// setup of the same installation (as a setup that is not safe to run
// twice at once would break), and waits for the file "go".
const exclusiveSetup = `import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "setup_attempts"), "a", encoding="utf-8") as f:
    f.write("attempt\n")
running = os.path.join(here, "setup_running")
try:
    os.close(os.open(running, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
except FileExistsError:
    raise SystemExit("another setup of this installation is running")
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.01)
os.remove(running)
`

// TestReloadTwiceWhileASetupRuns: an operator reloads the configuration
// twice while a setup module runs (two edits, two SIGHUPs). The setup
// is left to end, and no later preparation of the directory starts on it
// until it has: the setup runs once, never beside a second copy of
// itself, and every execute, including those that came between and after
// the reloads, is answered by the prepared installation.
func TestReloadTwiceWhileASetupRuns(t *testing.T) {
	var dir string
	project := func(cfg *Config) {
		dir = cfg.Projects["failing"].Directory
		cfg.Projects = map[string]Project{"slow": {Directory: dir, Setup: "slow_setup", Module: "tool"}}
	}
	r := newRig(t, project)
	writeFiles(t, dir, map[string]string{"slow_setup.py": exclusiveSetup})
	reload := func(allow string) {
		t.Helper()
		cfg := fixtureConfig(uvPath(t), r.root)
		project(&cfg)
		cfg.EnvAllow = []string{allow}
		if err := r.p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run := func(id string) chan envapi.Receipt {
		s := r.attach(id)
		out := make(chan envapi.Receipt, 1)
		go func() { out <- r.post(s.Execute(impl("slow"), json.RawMessage(`{}`), envtest.Millis(80_000))) }()
		return out
	}
	// current waits until an execute has started a preparation of the
	// directory other than old, and answers it.
	current := func(old *preparation) *preparation {
		t.Helper()
		for {
			r.p.mu.Lock()
			pr := r.p.preps[dir]
			r.p.mu.Unlock()
			if pr != nil && pr != old {
				return pr
			}
			select {
			case <-ctx.Done():
				t.Fatal("no preparation started")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	a := run("a")
	if _, err := waitForFile(ctx, filepath.Join(dir, "setup_attempts")); err != nil {
		t.Fatalf("the setup did not start: %v", err)
	}
	first := current(nil)
	reload("PYTHONUV_TEST_RELOADED_ONCE")
	b := run("b")
	second := current(first)
	reload("PYTHONUV_TEST_RELOADED_TWICE")
	c := run("c")
	current(second)

	// Until the first setup ends, the preparation that replaced the
	// replaced one must wait; an execute answered before that ran on a
	// preparation that did not.
	var early envapi.Receipt
	answered := false
waiting:
	for strings.Count(r.logs.String(), "waits for the preparation it replaces") < 2 {
		select {
		case early = <-c:
			answered = true
			break waiting
		case <-ctx.Done():
			t.Fatal("the third execute neither waited nor got an answer")
		case <-time.After(10 * time.Millisecond):
		}
	}
	writeFiles(t, dir, map[string]string{"go": ""})
	if answered {
		t.Fatalf("an execute after the second reload was answered while the first setup still ran: %s", describe(early))
	}
	for name, ch := range map[string]chan envapi.Receipt{"a": a, "b": b, "c": c} {
		select {
		case rc := <-ch:
			if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"reached":true}`) {
				t.Fatalf("execute %s: %s", name, describe(rc))
			}
		case <-ctx.Done():
			t.Fatalf("execute %s got no answer", name)
		}
	}
	if got := readFile(t, filepath.Join(dir, "setup_attempts")); got != "attempt\n" {
		t.Fatalf("setup attempts %q, want exactly one", got)
	}
}
