package pythonuv

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestSetupRunsOncePerInstallation: a provider started again over an
// installation an earlier one prepared syncs it but does not run its
// setup module again (the fixture's setup creates its marker exclusively,
// so a second run fails); an installation made afresh runs it again.
func TestSetupRunsOncePerInstallation(t *testing.T) {
	first := newRig(t, nil)
	if rc := first.post(first.attach("s1").Execute(impl("locked"), json.RawMessage(`{}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("first provider: %s", describe(rc))
	}
	_ = first.p.Close()

	again := newRigOn(t, first.root, nil)
	s2 := again.attach("s2")
	cmd := s2.Execute(impl("locked"), json.RawMessage(`{}`), envtest.Millis(120_000))
	if rc := again.post(cmd); rc.Type != envapi.ReceiptResult {
		t.Fatalf("provider started again over the prepared installation: %s", describe(rc))
	}
	if ev := strings.Join(preparationEvents(t, again, "s2", cmd.Operation.Sequence), ","); ev != "sync/started,sync/finished" {
		t.Fatalf("preparation events %q, want the sync alone", ev)
	}
	marker := filepath.Join(first.root, "locked", ".venv", "prepared")
	if got := readFile(t, marker); got != "six 1.17.0\n" {
		t.Fatalf("setup marker %q", got)
	}
}
