package pythonuv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// reports returns the resource observations reported for binding.
func reports(t *testing.T, r *rig) []envapi.Observation {
	t.Helper()
	var out []envapi.Observation
	for _, cl := range r.brain.Filter(func(cl envtest.Call) bool { return cl.Kind == envtest.KindReporter }) {
		var ev envapi.ReporterEvent
		if err := json.Unmarshal(cl.Input, &ev); err != nil || ev.Output == nil {
			t.Fatalf("reporter body %s: %v", cl.Input, err)
		}
		out = append(out, ev.Output.Observation)
	}
	return out
}

// reportsAtLeast waits until at least n resource observations were
// reported for r's bindings, and returns them.
func reportsAtLeast(t *testing.T, r *rig, n int) []envapi.Observation {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		obs := reports(t, r)
		if len(obs) >= n {
			return obs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d observations reported, want at least %d: %+v", len(obs), n, obs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRemovedVirtualEnvironmentIsALoss(t *testing.T) {
	r := newRig(t, nil)
	c := r.attach("s1")
	if rc := r.post(c.Execute(impl("locked"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("first execute: %s", describe(rc))
	}
	venv := filepath.Join(r.root, "locked", ".venv")
	if err := os.RemoveAll(venv); err != nil {
		t.Fatal(err)
	}
	rc := r.post(c.Execute(impl("locked"), json.RawMessage(`{"n":2}`), envtest.Millis(120_000)))
	details := wantFailure(t, rc, envapi.CodeResourceLost)
	if details["project"] != "locked" || !strings.Contains(rc.Message, "removed") {
		t.Errorf("loss %s", describe(rc))
	}
	// Nothing replaced the installation behind the operator's back.
	if _, err := os.Stat(venv); !os.IsNotExist(err) {
		t.Errorf("the virtual environment was re-created: %v", err)
	}
	// The loss stays, and is reported once per binding as a resource
	// observation.
	wantFailure(t, r.post(c.Execute(impl("locked"), nil, envtest.Millis(120_000))), envapi.CodeResourceLost)
	other := r.attach("s2")
	wantFailure(t, r.post(other.Execute(impl("locked"), nil, envtest.Millis(120_000))), envapi.CodeResourceLost)
	// The reports go out beside the answers.
	obs := reportsAtLeast(t, r, 2)
	if len(obs) != 2 {
		t.Fatalf("%d observations, want one per binding: %+v", len(obs), obs)
	}
	for _, o := range obs {
		if o.Scope != envapi.ScopeResource || o.Code != envapi.CodeResourceLost || o.Resource != "python_project:locked" {
			t.Errorf("observation %+v", o)
		}
	}
	// Another project is unaffected.
	if rc := r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":3}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("plain: %s", describe(rc))
	}
	// A reload prepares it again.
	if err := r.p.Reload(fixtureConfig(uvPath(t), r.root)); err != nil {
		t.Fatal(err)
	}
	if rc := r.post(c.Execute(impl("locked"), json.RawMessage(`{"n":4}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("after reload: %s", describe(rc))
	}
	if obs := reports(t, r); len(obs) != 2 {
		t.Fatalf("%d observations by the end, want one per binding: %+v", len(obs), obs)
	}
}

func TestRemovedProjectDirectoryIsALoss(t *testing.T) {
	r := newRig(t, nil)
	c := r.attach("s1")
	if rc := r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("first execute: %s", describe(rc))
	}
	if err := os.RemoveAll(filepath.Join(r.root, "plain")); err != nil {
		t.Fatal(err)
	}
	rc := r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":2}`), envtest.Millis(120_000)))
	wantFailure(t, rc, envapi.CodeResourceLost)
	if !strings.Contains(rc.Message, "project directory") {
		t.Errorf("loss %s", describe(rc))
	}
}

// TestReloadAfterARemovalNoExecuteSawPreparesAgain: an operator removes a
// prepared virtual environment (to rebuild it) and reloads before any
// execute met the loss: the reload forgets the lost installation as it
// would one an execute had reported, and the next execute prepares it
// again rather than answering resource_lost.
func TestReloadAfterARemovalNoExecuteSawPreparesAgain(t *testing.T) {
	r := newRig(t, nil)
	c := r.attach("s1")
	if rc := r.post(c.Execute(impl("locked"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("first execute: %s", describe(rc))
	}
	if err := os.RemoveAll(filepath.Join(r.root, "locked", ".venv")); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Reload(fixtureConfig(uvPath(t), r.root)); err != nil {
		t.Fatal(err)
	}
	if rc := r.post(c.Execute(impl("locked"), json.RawMessage(`{"n":2}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("after the removal and a reload: %s", describe(rc))
	}
}
