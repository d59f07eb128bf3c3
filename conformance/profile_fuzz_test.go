package conformance_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/conformance"
)

// A profile followed by anything but white space is refused.
func TestProfileTrailingData(t *testing.T) {
	const p = `{"executes":{"echo":{"implementation":1,"input":1}}}`
	if _, err := conformance.ParseProfile([]byte(p + "\n\t ")); err != nil {
		t.Fatalf("a profile with trailing white space: %v", err)
	}
	for _, tail := range []string{`{}`, `x`, `{"executes":{}}`, `}`, `]`} {
		if _, err := conformance.ParseProfile([]byte(p + tail)); err == nil || !strings.Contains(err.Error(), "trailing") {
			t.Errorf("profile followed by %s: %v, want a trailing-data error", tail, err)
		}
	}
}

// FuzzParseProfile: any profile file parses or gives an error, never a
// panic; a parsed profile has its echo, and its encoding parses to the
// same encoding.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte(`{"executes":{"echo":{"implementation":1,"input":1}},"capabilities":{"lazy_allocation":true,"turn_end_release":"release"},"expect":["cancel"]}`))
	f.Add([]byte(`{"executes":{"echo":{"implementation":{"tool":"command"},"input":{"shell":"cat"},"output":{"a":1}},"write":{"implementation":1,"input":2,"output_contains":["x"]}},"duplicate_setup":"fails"}`))
	f.Add([]byte(`{"executes":{"echo":{"implementation":1,"input":1}},"duplicate_setup":"maybe"}`))
	f.Add([]byte(`{"executes":{"echo":{"implementation":1,"input":1}}} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := conformance.ParseProfile(data)
		if err != nil {
			return
		}
		if _, ok := p.Executes[conformance.RoleEcho]; !ok {
			t.Fatalf("parsed a profile without an echo: %s", data)
		}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("encode %+v: %v", p, err)
		}
		p2, err := conformance.ParseProfile(enc)
		if err != nil {
			t.Fatalf("the encoding %s of a parsed profile does not parse: %v", enc, err)
		}
		enc2, _ := json.Marshal(p2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the profile:\n%s\n%s", enc, enc2)
		}
	})
}
