package model

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// redacted stands for the API key in an error message.
const redacted = "[redacted]"

// redact removes every echo of the API key from s (see echoAt): the key as
// sent, JSON-escaped or URL-encoded.
func (t transport) redact(s string) string {
	if t.key == "" {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if end, _ := echoAt(s, t.key, i); end > i {
			b.WriteString(redacted)
			i = end
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// redactCutKey removes the start of an echo of the API key that ends s,
// where a bound cut the key short.
func (t transport) redactCutKey(s string) string {
	if t.key == "" {
		return s
	}
	// An escape takes at most 6 bytes of text per byte of the key.
	for i := max(0, len(s)-6*len(t.key)); i < len(s); i++ {
		if _, cut := echoAt(s, t.key, i); cut {
			return s[:i] + redacted
		}
	}
	return s
}

// echoAt answers where an echo of key that starts at s[i] ends (-1: none
// does), and whether s ends inside one, after at least one byte of the
// key. An echo is the key's bytes in order, each as itself or escaped: as
// JSON escapes a character ("\/", "\"", "\\", "\t", "\uXXXX", a pair of
// them beyond the Basic Multilingual Plane), which is how an error body
// shown as text (one with no "error" object, one the bound cut, a body
// relayed inside a message) holds it, and as a URL encodes one ("%XX",
// "+" for a space), which is how a redirect's Location or an echoed URL
// holds it; hex digits in either case, escapes mixed as encoders mix
// them. The keys of the hosted providers (letters, digits, '-' and '_')
// are echoed as they are; a key a user chose for a gateway or a local
// server (a base64 token, a passphrase) may be escaped.
func echoAt(s, key string, i int) (end int, cut bool) {
	end = -1
	if c := s[i]; c != key[0] && c != '\\' && c != '%' && c != '+' {
		return end, false
	}
	type state struct{ j, k int } // at s[j], key[:k] matched
	var buf [8]state
	todo := append(buf[:0], state{i, 0})
	var seen map[state]bool // made once a position reads as the key two ways
	for len(todo) > 0 {
		st := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if st.k == len(key) {
			end = max(end, st.j)
			continue
		}
		if st.j == len(s) {
			cut = cut || st.k > 0
			continue
		}
		us, n := units(s, st.j)
		branch := false
		for _, u := range us[:n] {
			if u.partial {
				cut = cut || st.k > 0
				continue
			}
			if !strings.HasPrefix(key[st.k:], u.b) {
				continue
			}
			next := state{st.j + u.n, st.k + len(u.b)}
			if branch && seen == nil {
				seen = map[state]bool{}
			}
			branch = true
			if !seen[next] {
				if seen != nil {
					seen[next] = true
				}
				todo = append(todo, next)
			}
		}
	}
	return end, cut
}

// unit is one way to read the text at a position: n bytes of it standing
// for the bytes b, or (partial) an escape the text ends inside.
type unit struct {
	n       int
	b       string
	partial bool
}

// units answers the ways to read s at j (the byte itself, and the escape
// that starts there, if any) and how many there are.
func units(s string, j int) ([2]unit, int) {
	us := [2]unit{{n: 1, b: s[j : j+1]}}
	if e, ok := escapeAt(s, j); ok {
		us[1] = e
		return us, 2
	}
	return us, 1
}

// escapeAt reads the escape that starts at s[j], if any.
func escapeAt(s string, j int) (unit, bool) {
	partial := unit{partial: true}
	switch s[j] {
	case '+':
		return unit{n: 1, b: " "}, true
	case '%':
		v, got, ok := hexAt(s, j+1, 2)
		if ok {
			return unit{n: 3, b: oneByte(byte(v))}, true
		}
		return partial, got == len(s)-j-1
	case '\\':
	default:
		return unit{}, false
	}
	if j+1 == len(s) {
		return partial, true
	}
	if c, ok := jsonSimple[s[j+1]]; ok {
		return unit{n: 2, b: oneByte(c)}, true
	}
	if s[j+1] != 'u' {
		return unit{}, false
	}
	v, got, ok := hexAt(s, j+2, 4)
	switch {
	case !ok:
		return partial, got == len(s)-j-2
	case !utf16.IsSurrogate(rune(v)):
		return unit{n: 6, b: string(rune(v))}, true
	}
	// A surrogate: the second of the pair follows as another \uXXXX.
	if rest := s[j+6:]; len(rest) < 2 || rest[:2] != `\u` {
		return partial, len(rest) < 2 && strings.HasPrefix(`\u`, rest)
	}
	w, got, ok := hexAt(s, j+8, 4)
	if !ok {
		return partial, got == len(s)-j-8
	}
	if r := utf16.DecodeRune(rune(v), rune(w)); r != utf8.RuneError {
		return unit{n: 12, b: string(r)}, true
	}
	return unit{}, false
}

// byteValues holds every byte value once, for oneByte.
var byteValues = func() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}()

// oneByte is the string of the byte c, without allocating.
func oneByte(c byte) string { return byteValues[c : int(c)+1] }

// jsonSimple are the two-character JSON escapes and the byte each stands
// for.
var jsonSimple = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hexAt reads the n hex digits at s[j:]: their value, and how many of
// them there are (fewer than n where s ends or a byte is no hex digit).
func hexAt(s string, j, n int) (v int, got int, ok bool) {
	for got = 0; got < n; got++ {
		if j+got >= len(s) {
			return 0, got, false
		}
		d := hexDigit(s[j+got])
		if d < 0 {
			return 0, got, false
		}
		v = v<<4 | d
	}
	return v, n, true
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
