package docker

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// However a command's writes to stdout and stderr interleave, the output
// kept is all of both when they fit in the cap; when they do not, it fills
// the cap with the start of stdout and the end of stderr, each with at
// least half of the cap or all it has, and says truncated.
func TestOutputKeepsStartOfStdoutAndEndOfStderr(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		limit := int64(1 + rng.IntN(300))
		o := capture(limit, nil)
		var allOut, allErr bytes.Buffer
		for range rng.IntN(12) {
			p := make([]byte, rng.IntN(120))
			for j := range p {
				p[j] = byte('a' + rng.IntN(26))
			}
			if rng.IntN(2) == 0 {
				allOut.Write(p)
				_, _ = o.Stdout().Write(p)
			} else {
				allErr.Write(p)
				_, _ = o.Stderr().Write(p)
			}
		}
		stdout, stderr := o.Bytes()
		lo, le := int64(allOut.Len()), int64(allErr.Len())
		if lo+le <= limit {
			if o.Truncated() || !bytes.Equal(stdout, allOut.Bytes()) || !bytes.Equal(stderr, allErr.Bytes()) {
				t.Fatalf("case %d: %d+%d bytes within %d: kept %d+%d, truncated %v", i, lo, le, limit, len(stdout), len(stderr), o.Truncated())
			}
			continue
		}
		ko, ke := int64(len(stdout)), int64(len(stderr))
		if !o.Truncated() || ko+ke != limit || !bytes.HasPrefix(allOut.Bytes(), stdout) || !bytes.HasSuffix(allErr.Bytes(), stderr) ||
			ko < min(lo, limit/2) || ke < min(le, limit/2) {
			t.Fatalf("case %d: %d+%d bytes over %d: kept %d+%d (start of stdout %v, end of stderr %v), truncated %v",
				i, lo, le, limit, ko, ke, bytes.HasPrefix(allOut.Bytes(), stdout), bytes.HasSuffix(allErr.Bytes(), stderr), o.Truncated())
		}
	}
}

// The end of stderr kept cuts no character in two: it begins with a whole
// one.
func TestOutputTailBeginsWithAWholeCharacter(t *testing.T) {
	t.Parallel()
	o := capture(8, nil)
	_, _ = o.Stderr().Write([]byte("ééééééé!"))
	_, stderr := o.Bytes()
	if string(stderr) != "ééé!" || !o.Truncated() {
		t.Fatalf("stderr = %q, truncated %v; want %q, truncated", stderr, o.Truncated(), "ééé!")
	}
}

// The start of stdout kept ends with a whole character, however the cap
// falls: a character cut by the cap as it was written is dropped, not
// answered in part (which the answer would show as U+FFFD).
func TestOutputHeadEndsWithAWholeCharacter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit          int64
		stdout, stderr string
		want           string
	}{
		{8, "aééééé", "", "aééé"},
		{8, "ééé€€", "", "ééé"},
		{9, "a€€€€", "ab", "a€€"},
		{8, "ééé", "", "ééé"},
	} {
		o := capture(tc.limit, nil)
		_, _ = o.Stdout().Write([]byte(tc.stdout))
		_, _ = o.Stderr().Write([]byte(tc.stderr))
		stdout, stderr := o.Bytes()
		if string(stdout) != tc.want || string(stderr) != tc.stderr {
			t.Errorf("limit %d, stdout %q, stderr %q: kept %q and %q; want %q and %q", tc.limit, tc.stdout, tc.stderr, stdout, stderr, tc.want, tc.stderr)
		}
	}
}
