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

// hangingUV writes, in a fresh directory D, a uv that runs the shell
// commands first (which may name D as $D), records its pid in the file
// started and then hangs. The pids recorded in D are killed when the test
// ends.
func hangingUV(t *testing.T, first string) (uv, started string) {
	t.Helper()
	dir := t.TempDir()
	started = filepath.Join(dir, "started")
	uv = filepath.Join(dir, "uv")
	script := "#!/bin/sh\nD='" + dir + "'\n" + first + "echo $$ > \"$D/started.tmp\"\nmv \"$D/started.tmp\" \"$D/started\"\nexec sleep 600\n"
	if err := os.WriteFile(uv, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killHolders(dir) })
	return uv, started
}

// TestCloseWaitsForPreparations: Close stops a running preparation and
// returns only once it has ended, so that the processes it started do not
// outlive a provider that exits after Close. The hanging uv leaves a
// process holding its stderr, so ending the preparation takes the output
// drain bound after the kill.
func TestCloseWaitsForPreparations(t *testing.T) {
	root := fixtures(t)
	uv, started := hangingUV(t, "setsid sleep 30 </dev/null >/dev/null &\necho $! > \"$D/holder\"\n")
	p, err := New(Config{UV: uv, Projects: map[string]Project{"plain": {Directory: filepath.Join(root, "plain"), Module: "echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := p.preparation(p.s.projects["plain"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := waitForFile(ctx, started); err != nil {
		t.Fatalf("the hanging uv did not start: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ended, f := pr.ready()
	if !ended {
		t.Fatal("Close returned while the preparation still ran")
	}
	if f == nil || f.Phase != PhaseSync || !strings.Contains(f.Reason, "stopping") {
		t.Fatalf("the stopped preparation answers %+v, want a failed sync naming the stop", f)
	}
}

// TestPreparationTimeoutIsNamed: a sync that hangs past the preparation
// timeout fails, and its evidence names the timeout the operator can
// raise rather than an anonymous deadline.
func TestPreparationTimeoutIsNamed(t *testing.T) {
	uv, _ := hangingUV(t, "")
	r := newRig(t, func(cfg *Config) { cfg.UV = uv; cfg.PreparationTimeoutMS = 300 })
	rc := r.post(r.attach("s").Execute(impl("plain"), json.RawMessage(`{}`), envtest.Millis(60_000)))
	d := wantFailure(t, rc, envapi.CodePreparationFailed)
	if reason, _ := d["reason"].(string); d["phase"] != PhaseSync || !strings.Contains(reason, "preparation_timeout_ms") || !strings.Contains(rc.Message, "preparation_timeout_ms") {
		t.Fatalf("a preparation past its timeout answers %s", describe(rc))
	}
}
