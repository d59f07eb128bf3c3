package loophost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
)

// A WebAssembly component (what `wasm-tools component new` and
// cargo-component build) and a module in the text format are not core
// modules: their admission is rejected with a message that says what the
// bytes are and what Brain runs, not only that the version header or the
// magic number is wrong.
func TestAdmissionNamesWhatIsNotACoreModule(t *testing.T) {
	h := openHost(t, loophost.Options{ToolsDir: t.TempDir()})
	// The preamble of a component (layer 1), then an empty core module
	// section.
	component := []byte("\x00asm\x0d\x00\x01\x00\x01\x08\x00asm\x01\x00\x00\x00")
	for _, c := range []struct {
		name  string
		bytes []byte
		want  []string
	}{
		{"component", component, []string{"invalid module", "component", "core module", "wasip1"}},
		{"text format", []byte("(module\n  (memory (export \"memory\") 1))\n"), []string{"invalid module", "text format", "binary"}},
		{"text format after a comment", []byte(";; a tool\n(module)"), []string{"invalid module", "text format"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, admit := range []func(context.Context, []byte) (loophost.Admission, error){h.Admit, h.AdmitTool} {
				a, err := admit(context.Background(), c.bytes)
				if err != nil {
					t.Fatal(err)
				}
				if a.Status != loophost.StatusRejected || a.Error == nil || a.Error.Code != api.CodeInvalidRequest {
					t.Fatalf("admission %s %+v, want rejected as invalid_request", a.Status, a.Error)
				}
				for _, w := range c.want {
					if !strings.Contains(a.Error.Message, w) {
						t.Errorf("rejected with %q, want a message naming %q", a.Error.Message, w)
					}
				}
			}
		})
	}
}
