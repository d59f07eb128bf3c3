package fit

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// jsonLen is what encoding/json writes for s, without the quotes.
func jsonLen(t *testing.T, s []byte) int {
	t.Helper()
	raw, err := json.Marshal(string(s))
	if err != nil {
		t.Fatal(err)
	}
	return len(raw) - 2
}

// randomText mixes the characters JSON escapes (control characters, HTML
// characters, quotes, U+2028), multi-byte characters and bytes that are
// not UTF-8.
func randomText(r *rand.Rand, n int) []byte {
	pieces := []string{"a", "<", ">", "&", "\"", "\\", "\n", "\x01", "\x7f", "é", "€", "😀", "\u2028", "\u2029", "\xff", "\xe2\x82", "\ufffd"}
	var b []byte
	for len(b) < n {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return b
}

func TestTextLenIsWhatJSONWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := randomText(r, r.IntN(64))
		if got, want := TextLen(s), jsonLen(t, s); got != want {
			t.Fatalf("TextLen(%q) = %d, JSON writes %d", s, got, want)
		}
	}
	for b := range 256 {
		s := []byte{byte(b)}
		if got, want := TextLen(s), jsonLen(t, s); got != want {
			t.Fatalf("TextLen(%q) = %d, JSON writes %d", s, got, want)
		}
	}
}

func TestTextPrefixIsTheLongestThatFits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		s := randomText(r, r.IntN(64))
		n := r.IntN(3*len(s) + 1)
		k := TextPrefix(s, n)
		if jsonLen(t, s[:k]) > n {
			t.Fatalf("TextPrefix(%q, %d) = %d takes %d bytes", s, n, k, jsonLen(t, s[:k]))
		}
		if utf8.Valid(s) && !utf8.Valid(s[:k]) {
			t.Fatalf("TextPrefix(%q, %d) = %d cuts a character", s, n, k)
		}
		if k < len(s) {
			size, _ := next(s[k:])
			if jsonLen(t, s[:k+size]) <= n {
				t.Fatalf("TextPrefix(%q, %d) = %d, though the next character fits", s, n, k)
			}
		}
	}
}

func TestReadFitsItsRoom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, valid := range []bool{true, false} {
		for range 300 {
			data := randomText(r, 1+r.IntN(4000))
			if valid {
				data = []byte(strings.ToValidUTF8(string(data), "<"))
			}
			n := 60 + r.IntN(6000)
			out := Read(data, int64(len(data)), false, n)
			raw, _ := json.Marshal(out)
			whole := toolset.NewReadOutput(data, int64(len(data)), false)
			fits := encodedLen(whole) <= n
			switch {
			case fits && out != whole:
				t.Fatalf("an output that fits was changed: %+v", out)
			case !fits && (len(raw) > n || !out.Truncated):
				t.Fatalf("read of %d bytes in %d: %d bytes of JSON, truncated %v", len(data), n, len(raw), out.Truncated)
			}
			if valid && out.Encoding != toolset.EncodingUTF8 {
				t.Fatalf("text answered as %s", out.Encoding)
			}
			got := []byte(out.Content)
			if out.Encoding == toolset.EncodingBase64 {
				// base64 content decodes to a head of data.
				var err error
				if got, err = decodeBase64(out.Content); err != nil {
					t.Fatal(err)
				}
			}
			if string(data[:len(got)]) != string(got) {
				t.Fatalf("content is not the head of the data")
			}
		}
	}
}

func TestCommandFitsItsRoom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 500 {
		out := toolset.CommandOutput{ExitCode: 1, Stdout: string(randomText(r, r.IntN(3000))), Stderr: string(randomText(r, r.IntN(3000)))}
		n := 80 + r.IntN(8000)
		got := Command(out, n)
		raw, _ := json.Marshal(got)
		if encodedLen(out) <= n {
			if got != out {
				t.Fatalf("an output that fits was changed")
			}
			continue
		}
		if len(raw) > n || !got.Truncated || got.ExitCode != 1 {
			t.Fatalf("output of %d bytes in %d: %d bytes, truncated %v", encodedLen(out), n, len(raw), got.Truncated)
		}
		if !strings.HasPrefix(out.Stdout, got.Stdout) || !strings.HasSuffix(out.Stderr, got.Stderr) {
			t.Fatalf("the start of stdout and the end of stderr were not kept")
		}
		// Neither stream is cut while the room the other leaves holds
		// its next character.
		if k := len(got.Stdout); k < len(out.Stdout) {
			size, _ := next([]byte(out.Stdout[k:]))
			if longer := (toolset.CommandOutput{ExitCode: 1, Stdout: out.Stdout[:k+size], Stderr: got.Stderr, Truncated: true}); encodedLen(longer) <= n {
				t.Fatalf("stdout cut at %d bytes though more fits in %d", k, n)
			}
		}
		if j := len(out.Stderr) - len(got.Stderr); j > 0 {
			i := previous([]byte(out.Stderr), j)
			if longer := (toolset.CommandOutput{ExitCode: 1, Stdout: got.Stdout, Stderr: out.Stderr[i:], Truncated: true}); encodedLen(longer) <= n {
				t.Fatalf("stderr cut at %d bytes though more fits in %d", j, n)
			}
		}
	}
}

// previous is the start of the character of s (read from its start) that
// ends at j.
func previous(s []byte, j int) int {
	i := 0
	for i < j {
		size, _ := next(s[i:])
		if i+size >= j {
			return i
		}
		i += size
	}
	return i
}

func TestTextSuffixIsTheLongestThatFits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		s := randomText(r, r.IntN(64))
		n := r.IntN(3*len(s) + 1)
		j := TextSuffix(s, n)
		if jsonLen(t, s[j:]) > n {
			t.Fatalf("TextSuffix(%q, %d) = %d takes %d bytes", s, n, j, jsonLen(t, s[j:]))
		}
		if utf8.Valid(s) && !utf8.Valid(s[j:]) {
			t.Fatalf("TextSuffix(%q, %d) = %d cuts a character", s, n, j)
		}
		if j > 0 {
			if i := previous(s, j); jsonLen(t, s[i:]) <= n {
				t.Fatalf("TextSuffix(%q, %d) = %d, though the character before fits", s, n, j)
			}
		}
	}
}

// A failing command's stderr ends with what went wrong: cut to a small
// answer, the end is kept, whole characters of it, and the start of
// stdout.
func TestCommandKeepsTheEndOfStderr(t *testing.T) {
	last := "ValueError: <é> is not a number 😀\n"
	out := toolset.CommandOutput{
		ExitCode: 1,
		Stdout:   "step 1 done\n" + strings.Repeat("progress <>\n", 400),
		Stderr:   "Traceback (most recent call last):\n" + strings.Repeat("  File \"x.py\", line 1, in <module>\n", 400) + last,
	}
	const n = 1000
	got := Command(out, n)
	raw, _ := json.Marshal(got)
	if len(raw) > n || !got.Truncated || got.ExitCode != 1 {
		t.Fatalf("%d bytes in %d, truncated %v, exit %d", len(raw), n, got.Truncated, got.ExitCode)
	}
	if !strings.HasSuffix(got.Stderr, last) || !strings.HasSuffix(out.Stderr, got.Stderr) || !utf8.ValidString(got.Stderr) {
		t.Errorf("stderr %q is not the end of the command's", got.Stderr)
	}
	if !strings.HasPrefix(got.Stdout, "step 1 done\n") || !utf8.ValidString(got.Stdout) {
		t.Errorf("stdout %q is not the start of the command's", got.Stdout)
	}
	// Each stream has about half of the room.
	if room := n - len(`{"exit_code":1,"stdout":"","stderr":"","truncated":true}`); TextLen([]byte(got.Stdout)) < room/2-6 || TextLen([]byte(got.Stderr)) < room/2-6 {
		t.Errorf("stdout takes %d bytes, stderr %d, of %d", TextLen([]byte(got.Stdout)), TextLen([]byte(got.Stderr)), room)
	}
}

// A room too small for half of it to hold a character of each stream
// still holds one of them: the output is not emptied while it is cut.
func TestCommandInASmallRoomKeepsSomeOutput(t *testing.T) {
	out := toolset.CommandOutput{ExitCode: 1, Stdout: strings.Repeat("<", 50), Stderr: strings.Repeat(">", 50)}
	bare := encodedLen(toolset.CommandOutput{ExitCode: 1, Truncated: true})
	for extra := 6; extra < 12; extra++ {
		got := Command(out, bare+extra)
		if !got.Truncated || got.Stdout == "" && got.Stderr == "" {
			t.Errorf("in %d bytes past the envelope: stdout %q, stderr %q, truncated %v", extra, got.Stdout, got.Stderr, got.Truncated)
		}
		if raw, _ := json.Marshal(got); len(raw) > bare+extra {
			t.Errorf("in %d bytes: %d", bare+extra, len(raw))
		}
	}
}

func TestRoom(t *testing.T) {
	for _, tc := range []struct {
		max  int64
		want int
	}{{0, 32<<20 - 4096}, {1 << 20, 1<<20 - 4096}, {8192, 4096}, {1000, 500}, {1, 1}} {
		if got := Room(tc.max); got != tc.want {
			t.Errorf("Room(%d) = %d, want %d", tc.max, got, tc.want)
		}
	}
	if got := ListRoom(0); got != MaxListBytes {
		t.Errorf("ListRoom(0) = %d, want %d", got, MaxListBytes)
	}
}

func decodeBase64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }
