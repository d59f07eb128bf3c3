package pythonuv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestSymlinkedVirtualEnvironment: a virtual environment reached through
// a symbolic link (.venv pointing at a directory elsewhere), which uv
// syncs into and runs from, is an installation like any other: it is
// prepared and served, and a loss of the directory it points at is still
// the installation's loss.
func TestSymlinkedVirtualEnvironment(t *testing.T) {
	root := fixtures(t)
	target := filepath.Join(t.TempDir(), "venv")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "plain", ".venv")); err != nil {
		t.Fatal(err)
	}
	r := newRigOn(t, root, nil)
	c := r.attach("s")
	rc := r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000)))
	if rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"echo":{"n":1}}`) {
		t.Fatalf("execute on a symlinked virtual environment: %s", describe(rc))
	}
	if _, err := os.Stat(filepath.Join(target, "pyvenv.cfg")); err != nil {
		t.Fatalf("uv did not sync into the link's target: %v", err)
	}
	if err := os.RemoveAll(target); err != nil {
		t.Fatal(err)
	}
	rc = r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":2}`), envtest.Millis(120_000)))
	wantFailure(t, rc, envapi.CodeResourceLost)
	if !strings.Contains(rc.Message, "virtual environment") {
		t.Errorf("loss %s", describe(rc))
	}
}
