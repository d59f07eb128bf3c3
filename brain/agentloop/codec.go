package agentloop

import (
	"encoding/json"
	"errors"
	"strconv"
)

// This file and the other codec_*.go files are a reflection-free JSON
// codec for the payloads of the Wasm ABI (the TurnInput, the inputs and
// answers of the service functions and the turn answer). encoding/json
// builds its codec for a type by reflection the first time it sees the
// type, and in a fresh instance every use is the first: decoding the
// TurnInput alone cost milliseconds per activation. The codec gives the
// same results as encoding/json for these types: the encoder writes the
// same bytes as json.Marshal (HTML-safe strings, compacted RawMessage
// values, omitempty members omitted) and the decoder fills the same
// values as json.Unmarshal (null leaves scalars and structs alone, makes
// slices, maps and pointers nil and RawMessage the literal null; unknown
// members are ignored; member names match ignoring ASCII case). The tests
// compare both with encoding/json.
//
// codec.go holds the encoder's primitives, codec_decoder.go the
// decoder's, codec_string.go the string and number syntax, and
// codec_<concept>.go the codecs of the brain/api types of that concept.

// encoder appends JSON to b; the first failure is kept in err.
type encoder struct {
	b   []byte
	err error
}

// newEncoder answers an encoder with room for size bytes.
func newEncoder(size int) encoder { return encoder{b: make([]byte, 0, size)} }

func (e *encoder) str(s string) { e.b = appendString(e.b, s) }

func (e *encoder) uint(v uint64) { e.b = strconv.AppendUint(e.b, v, 10) }

func (e *encoder) int(v int64) { e.b = strconv.AppendInt(e.b, v, 10) }

func (e *encoder) bool(v bool) { e.b = strconv.AppendBool(e.b, v) }

// raw appends a RawMessage as json.Marshal does: nil as null, otherwise
// validated, compacted and HTML-escaped.
func (e *encoder) raw(m json.RawMessage) {
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	d := decoder{data: m}
	d.skip()
	if err := d.end(); err != nil {
		if e.err == nil {
			e.err = errors.New("json: error calling MarshalJSON for type json.RawMessage: " + err.Error())
		}
		e.b = append(e.b, "null"...)
		return
	}
	e.b = appendCompact(e.b, m)
}

// appendCompact appends the valid JSON value m without insignificant
// white space and with <, >, &, U+2028 and U+2029 escaped in its
// strings, as json.Marshal writes a RawMessage.
func appendCompact(dst, m []byte) []byte {
	const hex = "0123456789abcdef"
	start, inStr := 0, false
	for i := 0; i < len(m); i++ {
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

// key appends a member name (a plain ASCII literal) after a comma if
// needed; first tells whether it opens the object.
func (e *encoder) key(name string, first *bool) {
	if !*first {
		e.b = append(e.b, ',')
	}
	*first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

// rawArray encodes a []json.RawMessage.
func (e *encoder) rawArray(parts []json.RawMessage) {
	if parts == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, p := range parts {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.raw(p)
	}
	e.b = append(e.b, ']')
}
