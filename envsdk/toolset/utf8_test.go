package toolset_test

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

func TestTrimCutRune(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"café", "café"},                 // whole
		{"caf\xc3", "caf"},               // é cut after its first byte
		{"a\xe2\x82", "a"},               // € cut after two of three
		{"\xc3", "\xc3"},                 // only the start of one character
		{"\xff\xfe\xc3", "\xff\xfe\xc3"}, // not text: kept for base64
		{"", ""},
	} {
		if got := string(toolset.TrimCutRune([]byte(c.in))); got != c.want {
			t.Errorf("TrimCutRune(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want int
	}{{"abc", 0}, {"ab\xc3", 1}, {"ab\xf0\x9f\x98", 3}, {"ab\xf0\x9f\x98\x80", 0}, {"\x80", 0}} {
		if got := toolset.IncompleteTail([]byte(c.in)); got != c.want {
			t.Errorf("IncompleteTail(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestRuneCut(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  int
	}{
		{"abc", 5, 3},                      // all of it
		{"abcdef", 4, 4},                   // ASCII: the limit
		{"ab\xc3\xa9cd", 3, 2},             // é would be split: before it
		{"ab\xc3\xa9cd", 4, 4},             // é whole
		{"\xf0\x9f\x98\x80x", 2, 0},        // too small for the first character
		{"\xff\xff\xff\xff\xff\xff", 5, 5}, // not UTF-8: any cut
	} {
		if got := toolset.RuneCut([]byte(c.in), c.limit); got != c.want {
			t.Errorf("RuneCut(%q, %d) = %d, want %d", c.in, c.limit, got, c.want)
		}
	}
}
