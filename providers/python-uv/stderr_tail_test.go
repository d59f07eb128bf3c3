package pythonuv

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// noisyInput is the input making the noisy module write line to stderr
// and exit with status 3.
func noisyInput(line string) json.RawMessage {
	raw, _ := json.Marshal(map[string]any{"stderr": line})
	return raw
}

// TestStderrTailKeepsTheEndOfALongLastLine: a module that fails with a
// last line longer than the stderr bound (an exception whose message
// quotes a large value) is answered with the end of that line, not with
// an empty tail: the tail starts at a line boundary only when a line
// follows it.
func TestStderrTailKeepsTheEndOfALongLastLine(t *testing.T) {
	r := newRig(t, func(cfg *Config) {
		cfg.StderrLimitBytes = 64
		cfg.Projects["noisy"] = Project{Directory: cfg.Projects["plain"].Directory, Module: "noisy"}
	})
	s := r.attach("s")
	line := "ValueError: " + strings.Repeat("v", 200) + " is not a valid report"
	d := wantFailure(t, r.post(s.Execute(impl("noisy"), noisyInput("Traceback (most recent call last):\n"+line+"\n"), envtest.Millis(120_000))), envapi.CodeExecutionFailed)
	tail, _ := d["stderr"].(string)
	if !strings.Contains(tail, "is not a valid report") || !strings.HasSuffix(line+"\n", tail) {
		t.Fatalf("stderr tail %q; want the end of the last line %q", tail, line)
	}
	if d["stderr_truncated"] != true {
		t.Fatalf("details %v: the cut tail is not marked truncated", d)
	}
}
