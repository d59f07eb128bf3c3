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

// lateImportModule says it started, waits for the file "go" beside it and
// only then imports six, as a module that imports a dependency lazily, or
// starts a subprocess that does, would.
const lateImportModule = `import json
import os
import sys
import time

json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "started"), "w", encoding="utf-8") as f:
    f.write("started\n")
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.01)
try:
    import six
    version = six.__version__
except ImportError:
    version = None
json.dump({"six": version}, sys.stdout)
`

// TestReloadDoesNotSyncUnderARunningExecute: an operator changes a
// project's locked dependencies and reloads while an execute of the
// installation runs. The installation is synced to the new lock only once
// that execute has ended: the running invocation keeps the packages it
// started with, the next execute gets the new ones, and the executes of
// other directories are not held up meanwhile.
func TestReloadDoesNotSyncUnderARunningExecute(t *testing.T) {
	var dir string
	project := func(cfg *Config) {
		dir = cfg.Projects["locked"].Directory
		cfg.Projects = map[string]Project{
			"late":  {Directory: dir, Module: "late_import"},
			"deps":  {Directory: dir, Module: "six_version"},
			"plain": cfg.Projects["plain"],
		}
	}
	r := newRig(t, project)
	writeFiles(t, dir, map[string]string{"late_import.py": lateImportModule, "six_version.py": sixVersionModule})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	a, b := r.attach("a"), r.attach("b")
	running := make(chan envapi.Receipt, 1)
	go func() { running <- r.post(a.Execute(impl("late"), json.RawMessage(`{}`), envtest.Millis(80_000))) }()
	if _, err := waitForFile(ctx, filepath.Join(dir, "started")); err != nil {
		t.Fatalf("the execute did not start: %v", err)
	}

	// The operator drops the dependency and reloads.
	writeFiles(t, dir, map[string]string{"pyproject.toml": pyprojectWithoutSix, "uv.lock": lockWithoutSix})
	cfg := fixtureConfig(uvPath(t), r.root)
	project(&cfg)
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	next := make(chan envapi.Receipt, 1)
	go func() { next <- r.post(b.Execute(impl("deps"), json.RawMessage(`{}`), envtest.Millis(80_000))) }()

	// Until the running execute ends, the new preparation must wait; an
	// execute answered before that was prepared under it.
	var early envapi.Receipt
	answered := false
waiting:
	for !strings.Contains(r.logs.String(), "waits for the executes of the preparation it replaces") {
		select {
		case early = <-next:
			answered = true
			break waiting
		case <-ctx.Done():
			t.Fatal("the execute after the reload neither waited nor got an answer")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Another directory is not held up meanwhile.
	if !answered {
		if rc := r.post(b.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(60_000))); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"n":1}}`) {
			t.Fatalf("an execute of another directory while the new preparation waited: %s", describe(rc))
		}
	}
	writeFiles(t, dir, map[string]string{"go": ""})
	select {
	case rc := <-running:
		if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":"1.17.0"}`) {
			t.Fatalf("the execute that ran across the reload lost its packages: %s", describe(rc))
		}
	case <-ctx.Done():
		t.Fatal("the execute that ran across the reload got no answer")
	}
	if answered {
		t.Fatalf("an execute after the reload was prepared while an execute of the old installation ran: %s", describe(early))
	}
	select {
	case rc := <-next:
		if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":null}`) {
			t.Fatalf("the execute after the reload: %s", describe(rc))
		}
	case <-ctx.Done():
		t.Fatal("the execute after the reload got no answer")
	}
}

// TestExecuteAdmittedBeforeAReloadPreparesTheNewConfiguration: an execute
// admitted just before a reload that drops a project's failing setup
// module reaches the preparation after it. The installation is prepared
// as configured now: the dropped setup does not run, and the project does
// not stay failed under a configuration that no longer names the setup.
func TestExecuteAdmittedBeforeAReloadPreparesTheNewConfiguration(t *testing.T) {
	r := newRig(t, nil)
	r.p.mu.Lock()
	s, old := r.p.s, r.p.s.projects["failing"]
	r.p.mu.Unlock()

	cfg := fixtureConfig(uvPath(t), r.root)
	cfg.Projects["failing"] = Project{Directory: old.dir, Module: "tool"}
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	// The execute admitted under the old configuration goes on.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, got, _, release, err := r.p.prepared(ctx, s, old, func(project) func(PreparationEvent) { return func(PreparationEvent) {} })
	if err != nil {
		t.Fatalf("the execute admitted before the reload: %v", err)
	}
	release()
	if got.setup != "" {
		t.Fatalf("prepared the project as configured before the reload: %+v", got)
	}
	if rc := r.post(r.attach("s").Execute(impl("failing"), json.RawMessage(`{}`), envtest.Millis(60_000))); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"reached":true}`) {
		t.Fatalf("an execute after the reload: %s", describe(rc))
	}
}
