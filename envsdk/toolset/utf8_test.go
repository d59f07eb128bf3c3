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
