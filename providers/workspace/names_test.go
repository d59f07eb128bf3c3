package workspace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A path no file system can hold (a name longer than 255 bytes) or one
// that cannot be resolved (a loop of symbolic links) is the input's fault:
// every tool answers invalid_input naming the path, never
// execution_failed.
func TestFileToolsRefuseUnresolvableNames(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("ln -s loop loop && mkdir d && ln -s ../d/a d/a"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}
	long := strings.Repeat("n", 256)
	for _, p := range []string{long, "d/" + long + "/f", "loop", "d/a", "loop/f"} {
		for _, tc := range []struct {
			tool  string
			input map[string]any
		}{
			{"write", map[string]any{"path": p, "content": "x"}},
			{"write", map[string]any{"path": p, "content": "x", "append": true}},
			{"read", map[string]any{"path": p}},
			{"list", map[string]any{"path": p}},
			{"edit", map[string]any{"path": p, "old": "a", "new": "b"}},
			{"command", map[string]any{"argv": []string{"true"}, "cwd": p}},
		} {
			r := f.exec(c, tc.tool, tc.input, nil)
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidInput {
				t.Errorf("%s %.40q: %s %s: %.200s, want invalid_input", tc.tool, p, r.Type, r.Code, r.Message)
				continue
			}
			var d struct{ Path string }
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Path != p {
				t.Errorf("%s %.40q: details %s, want the path", tc.tool, p, r.Details)
			}
		}
	}
}

// A write that creates missing directories counts only the directories it
// creates against the file limit, not the parents that exist already.
func TestWriteCountsOnlyTheDirectoriesItCreates(t *testing.T) {
	f := newFixture(t, Options{MaxFiles: 5})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a/b/x", "content": ""}, nil), nil)   // a, a/b, a/b/x
	ok(t, f.exec(c, "write", map[string]string{"path": "a/b/c/y", "content": ""}, nil), nil) // + a/b/c, a/b/c/y: 5
	fails(t, f.exec(c, "write", map[string]string{"path": "a/z", "content": ""}, nil), CodeLimitExceeded)
	var u InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &u)
	if u.Files != 5 {
		t.Errorf("the workspace holds %d entries, want 5", u.Files)
	}
}

// A path whose form names a directory (it ends in a slash, or in "/.")
// is refused by the tools that work on a file: invalid_input naming the
// path. Cleaning it would drop the slash, and "a/" would write the file a.
func TestFileToolsRefuseAPathNamingADirectory(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "x"}, nil), nil)
	ok(t, f.exec(c, "write", map[string]string{"path": "d/g", "content": "x"}, nil), nil)
	for _, p := range []string{"a/", "f/", "d/", "f/.", "d/g/"} {
		for _, tc := range []struct {
			tool  string
			input map[string]any
		}{
			{"write", map[string]any{"path": p, "content": "y"}},
			{"write", map[string]any{"path": p, "content": "y", "append": true}},
			{"read", map[string]any{"path": p}},
			{"edit", map[string]any{"path": p, "old": "x", "new": "y"}},
		} {
			r := f.exec(c, tc.tool, tc.input, nil)
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeInvalidInput {
				t.Errorf("%s %q: %s %s: %.200s, want invalid_input", tc.tool, p, r.Type, r.Code, r.Message)
				continue
			}
			var d struct{ Path string }
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Path != p {
				t.Errorf("%s %q: details %s, want the path", tc.tool, p, r.Details)
			}
		}
	}
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("ls -A; cat f d/g"), nil), &out)
	if out.Stdout != "d\nf\nxx" {
		t.Errorf("workspace after the refused tools: %q, want d, f and both files unchanged", out.Stdout)
	}
}
