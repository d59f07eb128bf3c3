package idem

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The claim and answer records of a riding claim are written and read once
// per request. appendJournaled and parseJournaled handle the form
// json.Marshal gives a journaled value whose scope needs no escaping, which
// is the form every record this package writes has, without reflection;
// anything else goes to encoding/json, which decides (FuzzJournaledParse
// and FuzzJournaledAppend hold the two to the same answers).

// marshalJournaled answers j's JSON exactly as json.Marshal writes it.
func marshalJournaled(j *journaled) json.RawMessage {
	if b, ok := appendJournaled(make([]byte, 0, 96+len(j.Scope)+base64.StdEncoding.EncodedLen(len(j.Key)+len(j.Digest)+len(j.Body))), j); ok {
		return b
	}
	b, _ := json.Marshal(j)
	return b
}

// appendJournaled appends json.Marshal's form of j to b; ok is false when
// the scope needs escaping or the key is nil.
func appendJournaled(b []byte, j *journaled) ([]byte, bool) {
	if !plainString(j.Scope) || j.Key == nil {
		return nil, false
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(j.V), 10)
	b = append(b, `,"scope":"`...)
	b = append(b, j.Scope...)
	b = append(b, `","key":"`...)
	b = base64.StdEncoding.AppendEncode(b, j.Key)
	b = append(b, '"')
	if len(j.Digest) > 0 {
		b = append(b, `,"digest":"`...)
		b = base64.StdEncoding.AppendEncode(b, j.Digest)
		b = append(b, '"')
	}
	b = append(b, `,"at_ms":`...)
	b = strconv.AppendInt(b, j.AtMs, 10)
	if j.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(j.Status), 10)
	}
	if len(j.Body) > 0 {
		b = append(b, `,"body":"`...)
		b = base64.StdEncoding.AppendEncode(b, j.Body)
		b = append(b, '"')
	}
	return append(b, '}'), true
}

// plainString reports whether json.Marshal writes s as it is between its
// quotes: valid UTF-8 without control characters, quotes, backslashes, the
// characters it escapes for HTML, or U+2028 and U+2029.
func plainString(s string) bool {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !isRuneErrorAt(s, i):
			return false
		case r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			return false
		}
	}
	return true
}

// isRuneErrorAt reports whether s holds an encoded U+FFFD at i (not an
// invalid byte).
func isRuneErrorAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n == 3
}

// parseJournaled decodes data in the form appendJournaled writes; ok is
// false for anything else, which json.Unmarshal then decodes (or refuses).
func parseJournaled(data []byte) (j journaled, ok bool) {
	p := jparser{b: data}
	var v int64
	if !p.lit(`{"v":`) || !p.int(&v) || !p.lit(`,"scope":`) || !p.str(&j.Scope) || !p.lit(`,"key":`) || !p.bytes(&j.Key) {
		return journaled{}, false
	}
	if p.lit(`,"digest":`) && !p.bytes(&j.Digest) {
		return journaled{}, false
	}
	if !p.lit(`,"at_ms":`) || !p.int(&j.AtMs) {
		return journaled{}, false
	}
	var status int64
	if p.lit(`,"status":`) && !p.int(&status) {
		return journaled{}, false
	}
	if p.lit(`,"body":`) && !p.bytes(&j.Body) {
		return journaled{}, false
	}
	if !p.lit(`}`) || len(p.b) != 0 || v != int64(int32(v)) || status != int64(int32(status)) {
		return journaled{}, false
	}
	j.V, j.Status = int(v), int(status)
	return j, true
}

// jparser reads the canonical form from the front of b.
type jparser struct{ b []byte }

func (p *jparser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// int reads an integer as strconv writes it (no leading zeros, no "-0",
// at most 18 digits).
func (p *jparser) int(v *int64) bool {
	i := 0
	if i < len(p.b) && p.b[i] == '-' {
		i++
	}
	start := i
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		i++
	}
	digits := p.b[start:i]
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || start > 0)) {
		return false
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	if start > 0 {
		n = -n
	}
	*v, p.b = n, p.b[i:]
	return true
}

// raw reads a quoted string that plainString accepts and answers its
// bytes.
func (p *jparser) raw() ([]byte, bool) {
	if len(p.b) == 0 || p.b[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(p.b); i++ {
		if p.b[i] == '"' {
			s := p.b[1:i]
			if !plainString(string(s)) {
				return nil, false
			}
			p.b = p.b[i+1:]
			return s, true
		}
	}
	return nil, false
}

func (p *jparser) str(s *string) bool {
	b, ok := p.raw()
	if ok {
		*s = string(b)
	}
	return ok
}

// bytes reads base64 as encoding/json decodes a []byte.
func (p *jparser) bytes(out *[]byte) bool {
	b, ok := p.raw()
	if !ok {
		return false
	}
	d := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(d, b)
	if err != nil {
		return false
	}
	*out = d[:n]
	return true
}
