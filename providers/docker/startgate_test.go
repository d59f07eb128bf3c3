package docker

import (
	"bytes"
	"testing"
)

// The gate passes on what follows the start mark, whatever frames carry
// it, with stderr that came ahead of the mark; a stream without the mark
// passes nothing on and keeps the Engine's words.
func TestStartGate(t *testing.T) {
	t.Parallel()
	type frame struct {
		stderr bool
		data   string
	}
	for _, tc := range []struct {
		name             string
		frames           []frame
		started          bool
		out, errOut, why string
	}{
		{"whole mark", []frame{{false, startMark + "hi\n"}, {true, "e\n"}}, true, "hi\n", "e\n", ""},
		{"split mark", []frame{{false, startMark[:3]}, {true, "early\n"}, {false, startMark[3:]}, {false, "a"}, {false, "b"}}, true, "ab", "early\n", ""},
		{"mark only", []frame{{false, startMark}}, true, "", "", ""},
		{"refusal", []frame{{false, "cannot exec in a stopped state: unknown\r\n"}}, false, "", "", "cannot exec in a stopped state: unknown"},
		{"refusal sharing the mark's first byte", []frame{{false, startMark[:1] + "x"}}, false, "", "", startMark[:1] + "x"},
		{"nothing", nil, false, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			g := newStartGate(&out, &errOut)
			for _, f := range tc.frames {
				w := g.Stdout()
				if f.stderr {
					w = g.Stderr()
				}
				if n, err := w.Write([]byte(f.data)); n != len(f.data) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", f.data, n, err)
				}
			}
			if g.Started() != tc.started || out.String() != tc.out || errOut.String() != tc.errOut {
				t.Fatalf("started %v, stdout %q, stderr %q; want %v, %q, %q", g.Started(), out.String(), errOut.String(), tc.started, tc.out, tc.errOut)
			}
			if !tc.started && g.Refusal() != tc.why {
				t.Fatalf("refusal %q, want %q", g.Refusal(), tc.why)
			}
		})
	}
}
