package workspace

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// No program can be given a variable whose value holds a NUL byte: a
// binding configured with one could run no command at all. Setup refuses
// it as invalid_configuration naming the field, and records nothing.
func TestSetupRefusesNULInEnv(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	r := f.post(c.Setup(json.RawMessage(`{"env": {"A": "x\u0000y"}}`)))
	fails(t, r, envapi.CodeInvalidConfiguration)
	var details map[string]string
	if err := json.Unmarshal(r.Details, &details); err != nil || details["field"] != "configuration.env" {
		t.Errorf("details %s, want field configuration.env", r.Details)
	}
	if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
		t.Errorf("state files after a refused setup: %v", files)
	}
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeUnavailable)
}
