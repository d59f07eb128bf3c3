package guestjson

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unsafe"
)

// Decoder reads one JSON value from Data, from Pos on; the first failure
// is kept in Err and every later read answers zero values. The strings
// and RawMessage values it answers share Data (a RawMessage with its
// capacity cut, so that appending to it copies): Data must not be
// modified afterwards.
type Decoder struct {
	Data  []byte
	Pos   int
	Err   error
	depth int // objects and arrays open at Pos
}

// MaxDepth bounds how deeply objects and arrays nest, as encoding/json
// bounds it: a deeper value is refused.
const MaxDepth = 10000

// open enters an object or an array; it fails beyond MaxDepth, where
// the caller leaves without entering.
func (d *Decoder) open() bool {
	if d.depth >= MaxDepth {
		d.Fail("exceeded max depth")
		return false
	}
	d.depth++
	return true
}

// decodeError is a failure of the decoder.
type decodeError struct {
	msg string
	off int
}

func (e *decodeError) Error() string {
	return e.msg + " at offset " + strconv.Itoa(e.off)
}

// Fail records msg at the current offset, unless a failure is already
// recorded, and ends the input.
func (d *Decoder) Fail(msg string) {
	if d.Err == nil {
		d.Err = &decodeError{msg: msg, off: d.Pos}
	}
	d.Pos = len(d.Data)
}

// Space skips white space.
func (d *Decoder) Space() {
	for d.Pos < len(d.Data) {
		switch d.Data[d.Pos] {
		case ' ', '\t', '\n', '\r':
			d.Pos++
		default:
			return
		}
	}
}

// Peek answers the next non-space byte, or 0 at the end.
func (d *Decoder) Peek() byte {
	d.Space()
	if d.Pos >= len(d.Data) {
		return 0
	}
	return d.Data[d.Pos]
}

// End fails unless only white space is left.
func (d *Decoder) End() error {
	if d.Space(); d.Err == nil && d.Pos < len(d.Data) {
		d.Fail("invalid character after top-level value")
	}
	return d.Err
}

// Literal consumes the literal word if it is next.
func (d *Decoder) Literal(word string) bool {
	if d.Peek() != word[0] {
		return false
	}
	if len(d.Data)-d.Pos < len(word) || string(d.Data[d.Pos:d.Pos+len(word)]) != word {
		d.Fail("invalid literal")
		return false
	}
	d.Pos += len(word)
	return true
}

// Null consumes a null if it is next.
func (d *Decoder) Null() bool { return d.Err == nil && d.Literal("null") }

// Expect consumes c or fails.
func (d *Decoder) Expect(c byte) bool {
	if d.Peek() != c {
		d.Fail("expected '" + string(rune(c)) + "'")
		return false
	}
	d.Pos++
	return true
}

// Object calls member for each member of an object (nothing for null),
// with the name lower-cased in ASCII, to match struct members as
// encoding/json does; member must read the value.
func (d *Decoder) Object(member func(name string)) {
	d.Members(func(name string) { member(LowerASCII(name)) })
}

// Members calls member for each member of an object (nothing for null);
// member must read the value.
func (d *Decoder) Members(member func(name string)) {
	if d.Null() || !d.Expect('{') || !d.open() {
		return
	}
	if d.Peek() == '}' {
		d.Pos++
		d.depth--
		return
	}
	for d.Err == nil {
		if d.Peek() != '"' {
			d.Fail("expected a string as an object member name")
			break
		}
		name := d.Str()
		if !d.Expect(':') {
			break
		}
		member(name)
		switch d.Peek() {
		case ',':
			d.Pos++
			continue
		case '}':
			d.Pos++
		default:
			d.Fail("expected , or } in object")
		}
		break
	}
	d.depth--
}

// Array calls elem for each element of an array; it answers false for
// null (and on failure).
func (d *Decoder) Array(elem func()) bool {
	if d.Null() || !d.Expect('[') || !d.open() {
		return false
	}
	if d.Peek() == ']' {
		d.Pos++
		d.depth--
		return true
	}
	for d.Err == nil {
		elem()
		switch d.Peek() {
		case ',':
			d.Pos++
			continue
		case ']':
			d.Pos++
		default:
			d.Fail("expected , or ] in array")
		}
		break
	}
	d.depth--
	return d.Err == nil
}

// Uint reads an unsigned integer; null reads as 0.
func (d *Decoder) Uint() uint64 {
	if d.Null() {
		return 0
	}
	n := d.Number()
	if d.Err != nil {
		return 0
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		d.Fail("cannot read " + string(n) + " as an unsigned integer")
	}
	return v
}

// Int reads a signed integer; null reads as 0.
func (d *Decoder) Int() int64 {
	if d.Null() {
		return 0
	}
	n := d.Number()
	if d.Err != nil {
		return 0
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		d.Fail("cannot read " + string(n) + " as an integer")
	}
	return v
}

// IntPtr reads a nullable integer.
func (d *Decoder) IntPtr() *int64 {
	if d.Null() {
		return nil
	}
	v := d.Int()
	return &v
}

// Bool reads a boolean; null reads as false.
func (d *Decoder) Bool() bool {
	switch {
	case d.Literal("true"):
		return true
	case d.Literal("false"), d.Null():
		return false
	}
	d.Fail("expected a boolean")
	return false
}

// Skip reads over one value, checking its syntax.
func (d *Decoder) Skip() {
	switch c := d.Peek(); {
	case c == '{':
		d.Members(func(string) { d.Skip() })
	case c == '[':
		d.Array(func() { d.Skip() })
	case c == '"':
		d.SkipStr()
	case c == 't':
		d.Literal("true")
	case c == 'f':
		d.Literal("false")
	case c == 'n':
		d.Literal("null")
	default:
		d.Number()
	}
}

// Raw reads one value and answers its bytes (null included).
func (d *Decoder) Raw() json.RawMessage {
	d.Space()
	start := d.Pos
	d.Skip()
	if d.Err != nil {
		return nil
	}
	return d.Data[start:d.Pos:d.Pos]
}

// Bytes reads base64 (standard encoding) as json.Unmarshal reads a
// []byte; null reads as nil.
func (d *Decoder) Bytes() []byte {
	if d.Null() {
		return nil
	}
	s := d.Str()
	if d.Err != nil {
		return nil
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, unsafe.Slice(unsafe.StringData(s), len(s)))
	if err != nil {
		d.Fail("invalid base64: " + err.Error())
		return nil
	}
	return b[:n]
}

// Strings reads an array of strings; null reads as nil.
func (d *Decoder) Strings() []string {
	var out []string
	if d.Array(func() { out = append(out, d.Str()) }) && out == nil {
		out = []string{}
	}
	return out
}

// FloatPtr reads a nullable float64.
func (d *Decoder) FloatPtr() *float64 {
	if d.Null() {
		return nil
	}
	n := d.Number()
	if d.Err != nil {
		return nil
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		d.Fail("cannot read " + string(n) + " as a float64")
	}
	return &v
}
