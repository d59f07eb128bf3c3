package pythonuv

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// withoutSix is the locked fixture's pyproject.toml and uv.lock without
// its one dependency.
const (
	pyprojectWithoutSix = `[project]
name = "locked-fixture"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = []

[tool.uv]
no-index = true
find-links = ["wheels"]
`
	lockWithoutSix = `version = 1
revision = 5
requires-python = ">=3.11"

[[package]]
name = "locked-fixture"
version = "0.1.0"
source = { virtual = "." }
`
	sixVersionModule = `import json
import sys

json.load(sys.stdin)
try:
    import six
    version = six.__version__
except ImportError:
    version = None
json.dump({"six": version}, sys.stdout)
`
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReloadAfterTheLockChangedPreparesAgain: the preparation of a
// directory depends on its pyproject.toml and uv.lock. An operator who
// fixes a lock that failed to sync, or changes the locked dependencies of
// a prepared project, and then reloads the configuration gets an
// installation synced to the new lock; a reload that changes nothing
// keeps the outcome, failed or not.
func TestReloadAfterTheLockChangedPreparesAgain(t *testing.T) {
	var dir string
	r := newRig(t, func(cfg *Config) {
		dir = cfg.Projects["locked"].Directory
		cfg.Projects["deps"] = Project{Directory: dir, Module: "six_version"}
		delete(cfg.Projects, "locked")
	})
	withSix := map[string]string{
		"pyproject.toml": readFile(t, filepath.Join(dir, "pyproject.toml")),
		"uv.lock":        readFile(t, filepath.Join(dir, "uv.lock")),
	}
	// The lock is stale: pyproject.toml asks for six, uv.lock has none.
	writeFiles(t, dir, map[string]string{"uv.lock": lockWithoutSix, "six_version.py": sixVersionModule})
	cfg := fixtureConfig(uvPath(t), r.root)
	cfg.Projects["deps"] = Project{Directory: dir, Module: "six_version"}
	delete(cfg.Projects, "locked")

	s := r.attach("s")
	run := func() envapi.Receipt {
		return r.post(s.Execute(impl("deps"), json.RawMessage(`{}`), envtest.Millis(120_000)))
	}
	d := wantFailure(t, run(), envapi.CodePreparationFailed)
	if d["phase"] != PhaseSync {
		t.Fatalf("stale lock: details %v", d)
	}
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	wantFailure(t, run(), envapi.CodePreparationFailed)

	// The operator fixes the lock and reloads.
	writeFiles(t, dir, map[string]string{"uv.lock": withSix["uv.lock"]})
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if rc := run(); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":"1.17.0"}`) {
		t.Fatalf("after the lock was fixed and the configuration reloaded: %s", describe(rc))
	}

	// The operator drops the dependency from the project and reloads.
	writeFiles(t, dir, map[string]string{"pyproject.toml": pyprojectWithoutSix, "uv.lock": lockWithoutSix})
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if rc := run(); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":null}`) {
		t.Fatalf("after the dependency was dropped and the configuration reloaded: %s", describe(rc))
	}
	if n := strings.Count(r.logs.String(), "preparation phase started"); n != 3 {
		t.Fatalf("%d preparations ran, want 3 (one per version of the lock)", n)
	}
}

// TestReloadStopsAHangingPreparation: an operator whose uv sync hangs
// (an index that never answers, a wrong uv) changes the configuration and
// reloads: the hanging sync is stopped rather than awaited until the
// preparation timeout, the next execute is prepared with the new
// configuration, and an execute that was waiting for the replaced
// preparation is answered by the new one.
func TestReloadStopsAHangingPreparation(t *testing.T) {
	hanging, started := hangingUV(t, "")
	r := newRig(t, func(cfg *Config) { cfg.UV = hanging })
	a, b := r.attach("a"), r.attach("b")
	waiting := make(chan envapi.Receipt, 1)
	go func() {
		waiting <- r.post(a.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(60_000)))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := waitForFile(ctx, started); err != nil {
		t.Fatalf("the hanging uv did not start: %v", err)
	}

	if err := r.p.Reload(fixtureConfig(uvPath(t), r.root)); err != nil {
		t.Fatal(err)
	}
	if rc := r.post(b.Execute(impl("plain"), json.RawMessage(`{"n":2}`), envtest.Millis(20_000))); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"n":2}}`) {
		t.Fatalf("execute after the reload: %s", describe(rc))
	}
	select {
	case rc := <-waiting:
		if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"n":1}}`) {
			t.Fatalf("execute that waited across the reload: %s", describe(rc))
		}
	case <-ctx.Done():
		t.Fatal("the execute that waited for the replaced preparation got no answer")
	}
}

// TestReloadLetsARunningSetupEnd: a reload stops a sync, which uv can
// repeat, but never a setup module already running, which may not be
// repeatable: the setup ends, runs once, and both the execute that waited
// for it and a later one run.
func TestReloadLetsARunningSetupEnd(t *testing.T) {
	const slowSetup = `import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "setup_attempts"), "a", encoding="utf-8") as f:
    f.write("attempt\n")
while not os.path.exists(os.path.join(here, "go")):
    time.sleep(0.01)
`
	var dir string
	project := func(cfg *Config) {
		dir = cfg.Projects["failing"].Directory
		cfg.Projects = map[string]Project{"slow": {Directory: dir, Setup: "slow_setup", Module: "tool"}}
	}
	r := newRig(t, project)
	writeFiles(t, dir, map[string]string{"slow_setup.py": slowSetup})
	a, b := r.attach("a"), r.attach("b")
	waiting := make(chan envapi.Receipt, 1)
	go func() { waiting <- r.post(a.Execute(impl("slow"), json.RawMessage(`{}`), envtest.Millis(60_000))) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := waitForFile(ctx, filepath.Join(dir, "setup_attempts")); err != nil {
		t.Fatalf("the setup did not start: %v", err)
	}

	// A change the preparation depends on: it is replaced.
	cfg := fixtureConfig(uvPath(t), r.root)
	project(&cfg)
	cfg.EnvAllow = []string{"PYTHONUV_TEST_RELOADED"}
	if err := r.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"go": ""})
	select {
	case rc := <-waiting:
		if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"reached":true}`) {
			t.Fatalf("execute that waited for the setup: %s", describe(rc))
		}
	case <-ctx.Done():
		t.Fatal("the execute that waited for the setup got no answer")
	}
	if rc := r.post(b.Execute(impl("slow"), json.RawMessage(`{}`), envtest.Millis(60_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("execute after the reload: %s", describe(rc))
	}
	if got := readFile(t, filepath.Join(dir, "setup_attempts")); got != "attempt\n" {
		t.Fatalf("setup attempts %q, want exactly one", got)
	}
}

// TestRestartSyncsTheChangedLock: a provider started again after the
// project's lock changed syncs the installation to the new lock on first
// use, without a reload, but does not run the setup module again on the
// installation it already ran on.
func TestRestartSyncsTheChangedLock(t *testing.T) {
	deps := func(cfg *Config) {
		cfg.Projects["deps"] = Project{Directory: cfg.Projects["locked"].Directory, Setup: "prepare", Module: "six_version"}
	}
	root := fixtures(t)
	dir := filepath.Join(root, "locked")
	writeFiles(t, dir, map[string]string{"six_version.py": sixVersionModule})
	first := newRigOn(t, root, deps)
	if rc := first.post(first.attach("s1").Execute(impl("deps"), json.RawMessage(`{}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":"1.17.0"}`) {
		t.Fatalf("first provider: %s", describe(rc))
	}
	_ = first.p.Close()

	// The operator drops the dependency while the provider is down.
	writeFiles(t, dir, map[string]string{"pyproject.toml": pyprojectWithoutSix, "uv.lock": lockWithoutSix})
	again := newRigOn(t, root, deps)
	if rc := again.post(again.attach("s2").Execute(impl("deps"), json.RawMessage(`{}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"six":null}`) {
		t.Fatalf("provider started again after the lock changed: %s", describe(rc))
	}
	// The fixture's setup creates its marker exclusively: a second run
	// would have failed the preparation above.
	if got := readFile(t, filepath.Join(dir, ".venv", "prepared")); got != "six 1.17.0\n" {
		t.Fatalf("setup marker %q", got)
	}
}
