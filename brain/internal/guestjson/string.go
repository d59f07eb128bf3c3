package guestjson

import (
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// AppendString appends s as a JSON string exactly as json.Marshal writes
// it: HTML-safe (<, > and & escaped), U+2028 and U+2029 escaped and
// invalid UTF-8 replaced by U+FFFD.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if n := plainOut(s, i); n > 0 {
			i += n
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// MarshalString answers json.Marshal(s) without reflection.
func MarshalString(s string) []byte { return AppendString(nil, s) }

// LowerASCII answers s with its ASCII letters lower-cased.
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Str reads a string; null reads as "".
func (d *Decoder) Str() string {
	if d.Null() {
		return ""
	}
	if !d.Expect('"') {
		return ""
	}
	start := d.Pos
	for d.Pos < len(d.Data) {
		if n := plainIn(d.Data, d.Pos); n > 0 {
			d.Pos += n
			continue
		}
		c := d.Data[d.Pos]
		switch {
		case c == '"':
			s := d.alias(start, d.Pos)
			d.Pos++
			return s
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.slowStr(start)
		}
		d.Pos++
	}
	d.Fail("unexpected end of JSON input in string")
	return ""
}

// alias answers data[start:end] as a string without copying: the
// decoder's input is never modified while its values are in use (see
// decoder).
func (d *Decoder) alias(start, end int) string {
	if start == end {
		return ""
	}
	return unsafe.String(&d.Data[start], end-start)
}

// slowStr unquotes a string with escapes or non-ASCII bytes, as
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func (d *Decoder) slowStr(start int) string {
	b := make([]byte, 0, d.Pos-start+16)
	b = append(b, d.Data[start:d.Pos]...)
	for d.Pos < len(d.Data) {
		if n := plainIn(d.Data, d.Pos); n > 0 {
			b = append(b, d.Data[d.Pos:d.Pos+n]...)
			d.Pos += n
			continue
		}
		c := d.Data[d.Pos]
		switch {
		case c == '"':
			d.Pos++
			return string(b)
		case c < 0x20:
			d.Fail("invalid character in string literal")
			return ""
		case c == '\\':
			if d.Pos+1 >= len(d.Data) {
				d.Fail("unexpected end of JSON input in string")
				return ""
			}
			d.Pos += 2
			switch e := d.Data[d.Pos-1]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := d.hex4()
				if r < 0 {
					return ""
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if d.Pos+1 < len(d.Data) && d.Data[d.Pos] == '\\' && d.Data[d.Pos+1] == 'u' {
						save := d.Pos
						d.Pos += 2
						if r2 = d.hex4(); r2 < 0 {
							return ""
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
						d.Pos = save
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				d.Fail("invalid escape in string literal")
				return ""
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.Pos++
		default:
			r, size := utf8.DecodeRune(d.Data[d.Pos:])
			d.Pos += size
			b = utf8.AppendRune(b, r)
		}
	}
	d.Fail("unexpected end of JSON input in string")
	return ""
}

// SkipStr reads over a string, checking its syntax, without answering
// it.
func (d *Decoder) SkipStr() {
	if !d.Expect('"') {
		return
	}
	for d.Pos < len(d.Data) {
		if n := plainSkip(d.Data, d.Pos); n > 0 {
			d.Pos += n
			continue
		}
		switch c := d.Data[d.Pos]; {
		case c == '"':
			d.Pos++
			return
		case c < 0x20:
			d.Fail("invalid character in string literal")
			return
		case c == '\\':
			if d.Pos+1 >= len(d.Data) {
				d.Fail("unexpected end of JSON input in string")
				return
			}
			switch d.Data[d.Pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.Pos += 2
			case 'u':
				d.Pos += 2
				if d.hex4() < 0 {
					return
				}
			default:
				d.Fail("invalid escape in string literal")
				return
			}
		default:
			d.Pos++
		}
	}
	d.Fail("unexpected end of JSON input in string")
}

func (d *Decoder) hex4() rune {
	if d.Pos+4 > len(d.Data) {
		d.Fail("unexpected end of JSON input in \\u escape")
		return -1
	}
	var r rune
	for _, c := range d.Data[d.Pos : d.Pos+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			d.Fail("invalid character in \\u escape")
			return -1
		}
		r = r<<4 | rune(c)
	}
	d.Pos += 4
	return r
}

// Number reads the bytes of a JSON number.
func (d *Decoder) Number() []byte {
	d.Space()
	start := d.Pos
	p := d.Pos
	digits := func() bool {
		n := p
		for p < len(d.Data) && '0' <= d.Data[p] && d.Data[p] <= '9' {
			p++
		}
		return p > n
	}
	if p < len(d.Data) && d.Data[p] == '-' {
		p++
	}
	switch {
	case p < len(d.Data) && d.Data[p] == '0':
		p++
	case !digits():
		d.Fail("invalid number")
		return nil
	}
	if p < len(d.Data) && d.Data[p] == '.' {
		p++
		if !digits() {
			d.Fail("invalid number")
			return nil
		}
	}
	if p < len(d.Data) && (d.Data[p] == 'e' || d.Data[p] == 'E') {
		p++
		if p < len(d.Data) && (d.Data[p] == '+' || d.Data[p] == '-') {
			p++
		}
		if !digits() {
			d.Fail("invalid number")
			return nil
		}
	}
	d.Pos = p
	return d.Data[start:p]
}
