package model

import (
	"fmt"
	"strings"
	"testing"
)

// echo writes key as an error text may echo it, each byte as chosen by
// mask: as itself, URL-encoded (upper- or lower-case hex), JSON-escaped
// as \u00XX, or with JSON's two-character escape.
func echo(key string, mask []byte) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c, m := key[i], byte(0)
		if len(mask) > 0 {
			m = mask[i%len(mask)] % 5
		}
		switch {
		case m == 1:
			fmt.Fprintf(&b, "%%%02X", c)
		case m == 2:
			fmt.Fprintf(&b, "%%%02x", c)
		case m == 3 && c < 0x80:
			fmt.Fprintf(&b, `\u%04x`, c)
		case m == 4 && (c == '"' || c == '\\' || c == '/'):
			b.WriteString(`\` + string(c))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzRedactEcho: an echo of the key, in any mix of escapes, between any
// texts, is not left whole in the redacted text, and no text makes
// redaction fail.
func FuzzRedactEcho(f *testing.F) {
	f.Add("gwk_AbC/dEf+GhI/jKl9==", []byte{0, 1, 2, 3, 4}, "status 401: ", `"}`)
	f.Add(`local&key<1>"x"`, []byte{3, 4}, `{"detail":"`, "")
	f.Add("sk-test-SECRET-7f3a9c", []byte{0}, "key ", "\n")
	f.Add(`a\b%2F`, []byte{4, 1, 0}, `\`, "%")
	f.Fuzz(func(t *testing.T, key string, mask []byte, before, after string) {
		if key == "" || len(key) > 256 || checkKey(key) != nil {
			return
		}
		tr := transport{key: key}
		e := echo(key, mask)
		out := tr.redact(before + e + after)
		if strings.Contains(strings.ReplaceAll(out, redacted, "\x00"), e) {
			t.Fatalf("redact(%q) = %q: the echo %q of key %q is left", before+e+after, out, e, key)
		}
		for _, n := range []int{1, len(e) / 2, len(e) - 1} {
			_ = tr.redactCutKey(tr.redact(before + e[:n]))
		}
	})
}
