package pythonuv

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestOutputBrainWouldRefuseIsTheProjectsInvalidOutput checks that stdout
// that parses as JSON in Python's eyes but is not a JSON text Brain
// accepts (bytes that are not UTF-8, an object with a repeated member,
// which Python writes for a dict holding both 1 and "1") is answered as
// the project's invalid_output, with the evidence of the invocation and
// what is wrong with the output.
func TestOutputBrainWouldRefuseIsTheProjectsInvalidOutput(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.Projects["emit"] = Project{Directory: c.Projects["plain"].Directory, Module: "emit"}
	})
	s := r.attach("s")
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name, stdout, problem string
	}{
		{"not UTF-8", "\"caf\xe9\"", "not valid UTF-8"},
		{"repeated member", `{"1": "x", "1": "y"}`, `duplicate key "1"`},
		{"NaN past the excerpt", `{"pad": "` + long + `", "v": NaN}`, "after 3018 bytes"},
		{"two values", `{"a": 1} {"b": 2}`, "after top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"stdout_hex": hex.EncodeToString([]byte(tc.stdout)), "stderr": "evidence on stderr"})
			rc := r.post(s.Execute(impl("emit"), in, nil))
			d := wantFailure(t, rc, envapi.CodeInvalidOutput)
			if !strings.Contains(rc.Message, "project emit") || !strings.Contains(rc.Message, tc.problem) {
				t.Fatalf("message %q does not name the project and %q", rc.Message, tc.problem)
			}
			if d["project"] != "emit" || d["exit_code"] != float64(0) || !strings.Contains(d["stderr"].(string), "evidence on stderr") {
				t.Fatalf("details %v", d)
			}
			if stdout, _ := d["stdout"].(string); stdout == "" {
				t.Fatalf("details quote no stdout: %v", d)
			}
		})
	}
}

// TestEvidenceIsNotCutMidCharacter: the stdout excerpt of an
// invalid_output and the stderr tail of its details are bounded, and the
// bound never falls inside a character: the evidence quotes what the
// project wrote, with no replacement character it did not write.
func TestEvidenceIsNotCutMidCharacter(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.Projects["emit"] = Project{Directory: c.Projects["plain"].Directory, Module: "emit"}
		c.StderrLimitBytes = 1001
	})
	s := r.attach("s")
	// Three-byte characters: the stdout bound (1024 bytes) and the start
	// of the stderr tail (the last 1001 of 6001 bytes) both fall inside
	// one, and the stderr has no line break before its end to cut at.
	stdout := strings.Repeat("€", 2000)
	stderr := strings.Repeat("€", 2000)
	in, _ := json.Marshal(map[string]string{"stdout_hex": hex.EncodeToString([]byte(stdout)), "stderr": stderr})
	d := wantFailure(t, r.post(s.Execute(impl("emit"), in, nil)), envapi.CodeInvalidOutput)
	excerpt, _ := d["stdout"].(string)
	if excerpt == "" || strings.ContainsRune(excerpt, '\uFFFD') || !strings.HasPrefix(stdout, excerpt) || len(excerpt) < stdoutExcerpt-3 {
		t.Fatalf("stdout excerpt of %d bytes %q is not the start of what the project wrote", len(excerpt), excerpt)
	}
	tail, _ := d["stderr"].(string)
	if tail == "" || strings.ContainsRune(tail, '\uFFFD') || !strings.HasSuffix(stderr+"\n", tail) || d["stderr_truncated"] != true {
		t.Fatalf("stderr tail of %d bytes %q is not the end of what the project wrote", len(tail), tail)
	}
}

// TestOnlyJSONWhiteSpaceSurroundsTheValue: stdout may surround its JSON
// value with JSON white space (space, tab, CR, LF), which print and
// json.dump followed by a newline write; any other white space (a form
// feed, a vertical tab, a no-break space, a next line) is not JSON and
// the output is invalid_output, not a result.
func TestOnlyJSONWhiteSpaceSurroundsTheValue(t *testing.T) {
	r := newRig(t, func(c *Config) {
		c.Projects["emit"] = Project{Directory: c.Projects["plain"].Directory, Module: "emit"}
	})
	s := r.attach("s")
	emit := func(stdout string) envapi.Receipt {
		in, _ := json.Marshal(map[string]string{"stdout_hex": hex.EncodeToString([]byte(stdout))})
		return r.post(s.Execute(impl("emit"), in, nil))
	}
	if rc := emit(" \t\r\n{\"a\": 1}\r\n\t "); rc.Type != envapi.ReceiptResult || !jsonEqual(rc.Output, `{"a":1}`) {
		t.Fatalf("a value surrounded by JSON white space: %s", describe(rc))
	}
	for _, tc := range []struct{ name, stdout, problem string }{
		{"trailing form feed", "{\"a\": 1}\f", "ends with U+000C"},
		{"trailing vertical tab", "{\"a\": 1}\n\v", "ends with U+000B"},
		{"trailing no-break space", "{\"a\": 1}\u00a0", "ends with U+00A0"},
		{"trailing next line", "{\"a\": 1}\u0085", "ends with U+0085"},
		{"leading form feed", "\f{\"a\": 1}", "starts with U+000C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := emit(tc.stdout)
			wantFailure(t, rc, envapi.CodeInvalidOutput)
			if !strings.Contains(rc.Message, "project emit") || !strings.Contains(rc.Message, tc.problem) {
				t.Fatalf("message %q does not name the project and %q", rc.Message, tc.problem)
			}
		})
	}
}
