package docker

import (
	"bytes"
	"strings"
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
			g := newStartGate(&out, &errOut, 1<<20)
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

// Stderr that comes ahead of the start mark is held within the output
// budget, however much of it there is, and the command's output is what
// it would be had all of it been held: the end of stderr within the
// budget, marked truncated.
func TestStartGateHoldsStderrWithinTheBudget(t *testing.T) {
	t.Parallel()
	const budget = 64
	o := capture(budget, nil)
	g := newStartGate(o.Stdout(), o.Stderr(), budget)
	frame := []byte(strings.Repeat("e", 32<<10))
	for range 320 { // 10 MiB
		if n, err := g.Stderr().Write(frame); n != len(frame) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	const last = "Error: what went wrong\n"
	if _, err := g.Stderr().Write([]byte(last)); err != nil {
		t.Fatal(err)
	}
	if held := len(g.heldTail()); held != budget+1 {
		t.Fatalf("%d bytes held of the stderr ahead of the mark; want the budget and one byte", held)
	}
	if _, err := g.Stdout().Write([]byte(startMark + "o")); err != nil {
		t.Fatal(err)
	}
	// stdout keeps its start, within half the budget.
	want := strings.Repeat("e", budget-1-len(last)) + last
	stdout, stderr := o.Bytes()
	if !g.Started() || string(stderr) != want || string(stdout) != "o" || !o.Truncated() {
		t.Fatalf("started %v, stdout %q, stderr %q, truncated %v; want stdout \"o\", stderr %q, truncated", g.Started(), stdout, stderr, o.Truncated(), want)
	}
}
