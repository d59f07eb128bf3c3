package agentloop

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unsafe"
)

// decoder reads one JSON value from data; the first failure is kept in
// err and every later read answers zero values. The strings and
// RawMessage values it answers share data (a RawMessage with its capacity
// cut, so that appending to it copies): data must not be modified
// afterwards.
type decoder struct {
	data []byte
	pos  int
	err  error
}

// decodeError is a failure of the decoder.
type decodeError struct {
	msg string
	off int
}

func (e *decodeError) Error() string {
	return e.msg + " at offset " + strconv.Itoa(e.off)
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = &decodeError{msg: msg, off: d.pos}
	}
	d.pos = len(d.data)
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek answers the next non-space byte, or 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// end fails unless only white space is left.
func (d *decoder) end() error {
	if d.ws(); d.err == nil && d.pos < len(d.data) {
		d.fail("invalid character after top-level value")
	}
	return d.err
}

// literal consumes the literal word if it is next.
func (d *decoder) literal(word string) bool {
	if d.peek() != word[0] {
		return false
	}
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		d.fail("invalid literal")
		return false
	}
	d.pos += len(word)
	return true
}

// null consumes a null if it is next.
func (d *decoder) null() bool { return d.err == nil && d.literal("null") }

// expect consumes c or fails.
func (d *decoder) expect(c byte) bool {
	if d.peek() != c {
		d.fail("expected '" + string(rune(c)) + "'")
		return false
	}
	d.pos++
	return true
}

// object calls member for each member of an object (nothing for null),
// with the name lower-cased in ASCII, to match struct members as
// encoding/json does; member must read the value.
func (d *decoder) object(member func(name string)) {
	d.members(func(name string) { member(lowerASCII(name)) })
}

// members calls member for each member of an object (nothing for null);
// member must read the value.
func (d *decoder) members(member func(name string)) {
	if d.null() || !d.expect('{') {
		return
	}
	if d.peek() == '}' {
		d.pos++
		return
	}
	for d.err == nil {
		name := d.str()
		if !d.expect(':') {
			return
		}
		member(name)
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return
		default:
			d.fail("expected , or } in object")
		}
	}
}

// array calls elem for each element of an array; it answers false for
// null (and on failure).
func (d *decoder) array(elem func()) bool {
	if d.null() || !d.expect('[') {
		return false
	}
	if d.peek() == ']' {
		d.pos++
		return true
	}
	for d.err == nil {
		elem()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return true
		default:
			d.fail("expected , or ] in array")
		}
	}
	return false
}

// uint reads an unsigned integer; null reads as 0.
func (d *decoder) uint() uint64 {
	if d.null() {
		return 0
	}
	n := d.number()
	if d.err != nil {
		return 0
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		d.fail("cannot read " + string(n) + " as an unsigned integer")
	}
	return v
}

// int reads a signed integer; null reads as 0.
func (d *decoder) int() int64 {
	if d.null() {
		return 0
	}
	n := d.number()
	if d.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		d.fail("cannot read " + string(n) + " as an integer")
	}
	return v
}

// intPtr reads a nullable integer.
func (d *decoder) intPtr() *int64 {
	if d.null() {
		return nil
	}
	v := d.int()
	return &v
}

// bool reads a boolean; null reads as false.
func (d *decoder) bool() bool {
	switch {
	case d.literal("true"):
		return true
	case d.literal("false"), d.null():
		return false
	}
	d.fail("expected a boolean")
	return false
}

// skip reads over one value, checking its syntax.
func (d *decoder) skip() {
	switch c := d.peek(); {
	case c == '{':
		d.members(func(string) { d.skip() })
	case c == '[':
		d.array(func() { d.skip() })
	case c == '"':
		d.skipStr()
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	default:
		d.number()
	}
}

// raw reads one value and answers its bytes (null included).
func (d *decoder) raw() json.RawMessage {
	d.ws()
	start := d.pos
	d.skip()
	if d.err != nil {
		return nil
	}
	return d.data[start:d.pos:d.pos]
}

// bytes reads base64 (standard encoding) as json.Unmarshal reads a
// []byte; null reads as nil.
func (d *decoder) bytes() []byte {
	if d.null() {
		return nil
	}
	s := d.str()
	if d.err != nil {
		return nil
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, unsafe.Slice(unsafe.StringData(s), len(s)))
	if err != nil {
		d.fail("invalid base64: " + err.Error())
		return nil
	}
	return b[:n]
}

func (d *decoder) strings() []string {
	var out []string
	if d.array(func() { out = append(out, d.str()) }) && out == nil {
		out = []string{}
	}
	return out
}

// floatPtr reads a nullable float64.
func (d *decoder) floatPtr() *float64 {
	if d.null() {
		return nil
	}
	n := d.number()
	if d.err != nil {
		return nil
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		d.fail("cannot read " + string(n) + " as a float64")
	}
	return &v
}
