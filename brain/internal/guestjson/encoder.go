package guestjson

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Encoder appends JSON to B; the first failure is kept in Err.
type Encoder struct {
	B   []byte
	Err error
}

// NewEncoder answers an encoder with room for size bytes.
func NewEncoder(size int) Encoder { return Encoder{B: make([]byte, 0, size)} }

// Str appends s as a JSON string.
func (e *Encoder) Str(s string) { e.B = AppendString(e.B, s) }

// Uint appends v.
func (e *Encoder) Uint(v uint64) { e.B = strconv.AppendUint(e.B, v, 10) }

// Int appends v.
func (e *Encoder) Int(v int64) { e.B = strconv.AppendInt(e.B, v, 10) }

// Bool appends v.
func (e *Encoder) Bool(v bool) { e.B = strconv.AppendBool(e.B, v) }

// Raw appends a RawMessage as json.Marshal does: nil as null, otherwise
// validated, compacted and HTML-escaped.
func (e *Encoder) Raw(m json.RawMessage) {
	if m == nil {
		e.B = append(e.B, "null"...)
		return
	}
	d := Decoder{Data: m}
	d.Skip()
	if err := d.End(); err != nil {
		if e.Err == nil {
			e.Err = errors.New("json: error calling MarshalJSON for type json.RawMessage: " + err.Error())
		}
		e.B = append(e.B, "null"...)
		return
	}
	e.B = AppendCompact(e.B, m)
}

// AppendCompact appends the valid JSON value m without insignificant
// white space and with <, >, &, U+2028 and U+2029 escaped in its
// strings, as json.Marshal writes a RawMessage.
func AppendCompact(dst, m []byte) []byte {
	const hex = "0123456789abcdef"
	start, inStr := 0, false
	for i := 0; i < len(m); i++ {
		if inStr {
			if n := plainCompact(m, i); n > 0 {
				i += n - 1
				continue
			}
		}
		c := m[i]
		if inStr {
			switch {
			case c == '\\':
				i++
			case c == '"':
				inStr = false
			case c == '<' || c == '>' || c == '&':
				dst = append(dst, m[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
				start = i + 1
			case c == 0xE2 && i+2 < len(m) && m[i+1] == 0x80 && m[i+2]&^1 == 0xA8:
				dst = append(dst, m[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[m[i+2]&0xF])
				i += 2
				start = i + 1
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, m[start:i]...)
			start = i + 1
		}
	}
	return append(dst, m[start:]...)
}

// Key appends a member name (a plain ASCII literal) after a comma if
// needed; first tells whether it opens the object.
func (e *Encoder) Key(name string, first *bool) {
	if !*first {
		e.B = append(e.B, ',')
	}
	*first = false
	e.B = append(e.B, '"')
	e.B = append(e.B, name...)
	e.B = append(e.B, '"', ':')
}

// RawArray encodes a []json.RawMessage.
func (e *Encoder) RawArray(parts []json.RawMessage) {
	if parts == nil {
		e.B = append(e.B, "null"...)
		return
	}
	e.B = append(e.B, '[')
	for i, p := range parts {
		if i > 0 {
			e.B = append(e.B, ',')
		}
		e.Raw(p)
	}
	e.B = append(e.B, ']')
}
