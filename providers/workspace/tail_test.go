package workspace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command that writes much on stderr and then fails keeps its last
// error line in the answer; its stdout keeps its start.
func TestCommandKeepsEndOfStderr(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 4096})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"output_limit": 200}`))))
	script := `echo first; i=0; while [ $i -lt 1600 ]; do printf 'warning: é%060d\n' $i >&2; i=$((i+1)); done; echo 'fatal: disk full at step 42' >&2; echo last; exit 3`
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh(script), nil), &out)
	if out.ExitCode != 3 || !out.Truncated {
		t.Fatalf("exit %d, truncated %v", out.ExitCode, out.Truncated)
	}
	if !strings.HasSuffix(out.Stderr, "fatal: disk full at step 42\n") {
		t.Errorf("stderr lost its last line: %q", out.Stderr)
	}
	if len(out.Stderr) > 200 || len(out.Stderr) < 197 || !utf8.ValidString(out.Stderr) {
		t.Errorf("stderr of %d bytes, valid UTF-8 %v: %q", len(out.Stderr), utf8.ValidString(out.Stderr), out.Stderr)
	}
	if out.Stdout != "first\nlast\n" {
		t.Errorf("stdout %q", out.Stdout)
	}
	// A stderr within the limit is kept whole and nothing is said cut.
	ok(t, f.exec(c, "command", sh(`printf 'é%0198d' 0 >&2`), nil), &out)
	if out.Truncated || out.Stderr != "é"+strings.Repeat("0", 198) {
		t.Errorf("stderr of exactly the limit: truncated %v, %q", out.Truncated, out.Stderr)
	}
}

func TestTailKeepsEndBetweenCharacters(t *testing.T) {
	const limit = 10
	var stream []byte
	for i := range 300 {
		stream = append(stream, []byte(string(rune('a'+i%26))+"é€")...)
	}
	// Written in pieces of every size from 1 to 13 bytes, a cut falls
	// inside characters as well as between them.
	for size := 1; size <= limit+3; size++ {
		for n := 0; n <= len(stream); n++ {
			if !utf8.Valid(stream[:n]) {
				continue
			}
			var fwd []byte
			tl := newTail(limit, func(p []byte) { fwd = append(fwd, p...) })
			data := stream[:n]
			for p := data; len(p) > 0; {
				k := min(size, len(p))
				tl.Write(p[:k])
				p = p[k:]
			}
			got := tl.Bytes()
			if tl.Truncated() != (n > limit) {
				t.Fatalf("size %d, %d bytes: truncated %v", size, n, tl.Truncated())
			}
			if !bytes.HasSuffix(data, got) || len(got) > limit || !utf8.Valid(got) {
				t.Fatalf("size %d, %d bytes: kept %q", size, n, got)
			}
			if n <= limit && !bytes.Equal(got, data) {
				t.Fatalf("size %d, %d bytes: kept %q of %q", size, n, got, data)
			}
			if n > limit && len(got) < limit-utf8.UTFMax+1 {
				t.Fatalf("size %d, %d bytes: kept only %q", size, n, got)
			}
			if !bytes.Equal(fwd, data[:min(n, limit)]) {
				t.Fatalf("size %d, %d bytes: forwarded %q", size, n, fwd)
			}
		}
	}
}

// A command whose stdout the limit cuts inside a character answers the
// start of its stdout up to the last whole character, not a part of one
// (which the answer would show as U+FFFD).
func TestCommandStdoutEndsWithAWholeCharacter(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 4096})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"output_limit": 100}`))))
	for _, lead := range []string{"", "a", "ab"} {
		// "€" takes three bytes: one of the leads puts the cut at 100
		// bytes inside one, whichever.
		var out toolset.CommandOutput
		ok(t, f.exec(c, "command", map[string]any{"argv": []string{"printf", lead + strings.Repeat("€", 50)}}, nil), &out)
		want := lead + strings.Repeat("€", (100-len(lead))/3)
		if !out.Truncated || out.Stdout != want {
			t.Errorf("lead %q: stdout %q, truncated %v; want %q, truncated", lead, out.Stdout, out.Truncated, want)
		}
	}
}
