package workspace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A file tool refused for its path names the path in details cut, as the
// message is, to envapi.MaxMessageLen bytes: a long path makes no answer
// larger than Brain takes, which would be answered output_limit instead
// of the failure that says what is wrong with the path.
func TestRefusedLongPathIsCutInDetails(t *testing.T) {
	f := newFixture(t, Options{MaxAnswerBytes: 64 << 10})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "command", sh("ln -s ../../.. up"), nil), nil)
	long := strings.Repeat("n", 70_000)
	for _, tc := range []struct {
		path, code string
		write      bool // a write would create the directory that is missing
	}{
		{long, envapi.CodeInvalidInput, true},            // a name longer than the file system allows
		{"missing/" + long, envapi.CodeNotFound, false},  // below a directory that does not exist
		{"up/" + long, envapi.CodePathEscape, true},      // through a link that leads outside
		{"up/x/../" + long, envapi.CodePathEscape, true}, // the same, through a name that climbs
	} {
		for _, in := range []struct {
			tool  string
			input map[string]any
		}{
			{"read", map[string]any{"path": tc.path}},
			{"list", map[string]any{"path": tc.path}},
			{"write", map[string]any{"path": tc.path, "content": "x"}},
			{"write", map[string]any{"path": tc.path, "content": "x", "append": true}},
			{"edit", map[string]any{"path": tc.path, "old": "a", "new": "b"}},
			{"command", map[string]any{"argv": []string{"true"}, "cwd": tc.path}},
		} {
			if in.tool == "write" && !tc.write {
				continue
			}
			r := f.exec(c, in.tool, in.input, nil)
			if r.Type != envapi.ReceiptFailure || r.Code != tc.code {
				t.Errorf("%s %.20q…: %s %s %.120s, want the failure %s", in.tool, tc.path, r.Type, r.Code, r.Message, tc.code)
				continue
			}
			var d struct{ Path string }
			if err := json.Unmarshal(r.Details, &d); err != nil || d.Path != envapi.Truncate(tc.path) {
				t.Errorf("%s %.20q…: details hold a %d-byte path, want the path cut to %d bytes", in.tool, tc.path, len(d.Path), envapi.MaxMessageLen)
			}
		}
	}
}
