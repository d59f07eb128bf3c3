package agentloop

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/brain-in-go/brain/brain/api"
)

// This file is a reflection-free JSON codec for the payloads of the Wasm
// ABI (the TurnInput, the inputs and answers of the service functions and
// the turn answer). encoding/json builds its codec for a type by
// reflection the first time it sees the type, and in a fresh instance
// every use is the first: decoding the TurnInput alone cost milliseconds
// per activation. The codec gives the same results as encoding/json for
// these types: the encoder writes the same bytes as json.Marshal
// (HTML-safe strings, compacted RawMessage values, omitempty members
// omitted) and the decoder fills the same values as json.Unmarshal (null
// leaves scalars and structs alone, makes slices, maps and pointers nil
// and RawMessage the literal null; unknown members are ignored; member
// names match ignoring ASCII case). The tests compare both with
// encoding/json.

// ---- encoding ----

// encoder appends JSON to b; the first failure is kept in err.
type encoder struct {
	b   []byte
	err error
}

// newEncoder answers an encoder with room for size bytes.
func newEncoder(size int) encoder { return encoder{b: make([]byte, 0, size)} }

// sizeMessages estimates the encoded size of ms.
func sizeMessages(ms []api.Message) int {
	n := 2
	for _, m := range ms {
		n += 32 + len(m.Role)
		for _, c := range m.Content {
			n += 48 + len(c.Type) + len(c.Text) + len(c.URL) + len(c.MediaType) + len(c.Format) + len(c.Data) +
				len(c.ID) + len(c.Name) + len(c.Input) + len(c.ToolUseID) + len(c.Content) + 64*len(c.Media)
		}
	}
	return n
}

// appendString appends s as a JSON string exactly as json.Marshal writes
// it: HTML-safe (<, > and & escaped), U+2028 and U+2029 escaped and
// invalid UTF-8 replaced by U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
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
func marshalString(s string) []byte { return appendString(nil, s) }

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

func (e *encoder) media(m api.Media) {
	first := true
	e.b = append(e.b, '{')
	e.key("type", &first)
	e.str(m.Type)
	e.key("url", &first)
	e.str(m.URL)
	if m.MediaType != "" {
		e.key("media_type", &first)
		e.str(m.MediaType)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) block(c *api.ContentBlock) {
	first := true
	e.b = append(e.b, '{')
	e.key("type", &first)
	e.str(c.Type)
	for _, f := range [...]struct {
		name, v string
	}{{"text", c.Text}, {"url", c.URL}, {"media_type", c.MediaType}, {"format", c.Format}} {
		if f.v != "" {
			e.key(f.name, &first)
			e.str(f.v)
		}
	}
	if len(c.Data) > 0 {
		e.key("data", &first)
		e.raw(c.Data)
	}
	if c.ID != "" {
		e.key("id", &first)
		e.str(c.ID)
	}
	if c.Name != "" {
		e.key("name", &first)
		e.str(c.Name)
	}
	if len(c.Input) > 0 {
		e.key("input", &first)
		e.raw(c.Input)
	}
	if c.ToolUseID != "" {
		e.key("tool_use_id", &first)
		e.str(c.ToolUseID)
	}
	if len(c.Content) > 0 {
		e.key("content", &first)
		e.raw(c.Content)
	}
	if c.IsError != nil {
		e.key("is_error", &first)
		e.bool(*c.IsError)
	}
	if len(c.Media) > 0 {
		e.key("media", &first)
		e.b = append(e.b, '[')
		for i, m := range c.Media {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.media(m)
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) message(m *api.Message) {
	e.b = append(e.b, `{"role":`...)
	e.str(m.Role)
	e.b = append(e.b, `,"content":`...)
	if m.Content == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i := range m.Content {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.block(&m.Content[i])
		}
		e.b = append(e.b, ']')
	}
	e.b = append(e.b, '}')
}

func (e *encoder) messages(ms []api.Message) {
	if ms == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i := range ms {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.message(&ms[i])
	}
	e.b = append(e.b, ']')
}

func (e *encoder) modelRequest(r *api.ModelRequest) {
	e.b = append(e.b, `{"messages":`...)
	e.messages(r.Messages)
	if r.System != nil {
		e.b = append(e.b, `,"system":`...)
		e.str(*r.System)
	}
	if len(r.Tools) > 0 {
		e.b = append(e.b, `,"tools":[`...)
		for i, t := range r.Tools {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `{"name":`...)
			e.str(t.Name)
			e.b = append(e.b, `,"description":`...)
			e.str(t.Description)
			e.b = append(e.b, `,"input_schema":`...)
			e.raw(t.InputSchema)
			if len(t.OutputSchema) > 0 {
				e.b = append(e.b, `,"output_schema":`...)
				e.raw(t.OutputSchema)
			}
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	}
	if len(r.ResponseFormat) > 0 {
		e.b = append(e.b, `,"response_format":`...)
		e.raw(r.ResponseFormat)
	}
	if r.MaxOutputTokens != nil {
		e.b = append(e.b, `,"max_output_tokens":`...)
		e.int(*r.MaxOutputTokens)
	}
	if len(r.Options) > 0 {
		e.b = append(e.b, `,"options":`...)
		e.raw(r.Options)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) invocations(calls []api.ToolInvocation) {
	if calls == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, c := range calls {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, `{"call_id":`...)
		e.str(c.CallID)
		e.b = append(e.b, `,"name":`...)
		e.str(c.Name)
		e.b = append(e.b, `,"environment":`...)
		e.str(c.Environment)
		if c.EnvironmentSequence != 0 {
			e.b = append(e.b, `,"environment_sequence":`...)
			e.uint(c.EnvironmentSequence)
		}
		e.b = append(e.b, `,"input":`...)
		e.raw(c.Input)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

// keyRaw encodes {"<k1>":s,"<k2>":raw}: EmitInput and KVPutInput.
func (e *encoder) keyRaw(k1, s, k2 string, raw json.RawMessage) {
	e.b = append(e.b, `{"`...)
	e.b = append(e.b, k1...)
	e.b = append(e.b, `":`...)
	e.str(s)
	e.b = append(e.b, `,"`...)
	e.b = append(e.b, k2...)
	e.b = append(e.b, `":`...)
	e.raw(raw)
	e.b = append(e.b, '}')
}

// turnOutput encodes a TurnOutput.
func (e *encoder) turnOutput(o *api.TurnOutput) {
	e.b = append(e.b, '{')
	if len(o.Result) > 0 {
		e.b = append(e.b, `"result":`...)
		e.raw(o.Result)
	}
	e.b = append(e.b, '}')
}

// turnError encodes {"error":{"message":...,"ref"?:...}}.
func (e *encoder) turnError(message string, ref uint32) {
	e.b = append(e.b, `{"error":{"message":`...)
	e.str(message)
	if ref != 0 {
		e.b = append(e.b, `,"ref":`...)
		e.uint(uint64(ref))
	}
	e.b = append(e.b, "}}"...)
}

// ---- decoding ----

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

func lowerASCII(s string) string {
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

// str reads a string; null reads as "".
func (d *decoder) str() string {
	if d.null() {
		return ""
	}
	if !d.expect('"') {
		return ""
	}
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := d.alias(start, d.pos)
			d.pos++
			return s
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.slowStr(start)
		}
		d.pos++
	}
	d.fail("unexpected end of JSON input in string")
	return ""
}

// alias answers data[start:end] as a string without copying: the
// decoder's input is never modified while its values are in use (see
// decoder).
func (d *decoder) alias(start, end int) string {
	if start == end {
		return ""
	}
	return unsafe.String(&d.data[start], end-start)
}

// slowStr unquotes a string with escapes or non-ASCII bytes, as
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func (d *decoder) slowStr(start int) string {
	b := make([]byte, 0, d.pos-start+16)
	b = append(b, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(b)
		case c < 0x20:
			d.fail("invalid character in string literal")
			return ""
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				d.fail("unexpected end of JSON input in string")
				return ""
			}
			d.pos += 2
			switch e := d.data[d.pos-1]; e {
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
					if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						if r2 = d.hex4(); r2 < 0 {
							return ""
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
						d.pos = save
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				d.fail("invalid escape in string literal")
				return ""
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			d.pos += size
			b = utf8.AppendRune(b, r)
		}
	}
	d.fail("unexpected end of JSON input in string")
	return ""
}

// skipStr reads over a string, checking its syntax, without answering
// it.
func (d *decoder) skipStr() {
	if !d.expect('"') {
		return
	}
	for d.pos < len(d.data) {
		switch c := d.data[d.pos]; {
		case c == '"':
			d.pos++
			return
		case c < 0x20:
			d.fail("invalid character in string literal")
			return
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				d.fail("unexpected end of JSON input in string")
				return
			}
			switch d.data[d.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.pos += 2
			case 'u':
				d.pos += 2
				if d.hex4() < 0 {
					return
				}
			default:
				d.fail("invalid escape in string literal")
				return
			}
		default:
			d.pos++
		}
	}
	d.fail("unexpected end of JSON input in string")
}

func (d *decoder) hex4() rune {
	if d.pos+4 > len(d.data) {
		d.fail("unexpected end of JSON input in \\u escape")
		return -1
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			d.fail("invalid character in \\u escape")
			return -1
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r
}

// number reads the bytes of a JSON number.
func (d *decoder) number() []byte {
	d.ws()
	start := d.pos
	p := d.pos
	digits := func() bool {
		n := p
		for p < len(d.data) && '0' <= d.data[p] && d.data[p] <= '9' {
			p++
		}
		return p > n
	}
	if p < len(d.data) && d.data[p] == '-' {
		p++
	}
	switch {
	case p < len(d.data) && d.data[p] == '0':
		p++
	case !digits():
		d.fail("invalid number")
		return nil
	}
	if p < len(d.data) && d.data[p] == '.' {
		p++
		if !digits() {
			d.fail("invalid number")
			return nil
		}
	}
	if p < len(d.data) && (d.data[p] == 'e' || d.data[p] == 'E') {
		p++
		if p < len(d.data) && (d.data[p] == '+' || d.data[p] == '-') {
			p++
		}
		if !digits() {
			d.fail("invalid number")
			return nil
		}
	}
	d.pos = p
	return d.data[start:p]
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

func (d *decoder) media() []api.Media {
	var out []api.Media
	if d.array(func() {
		var m api.Media
		d.object(func(name string) {
			switch name {
			case "type":
				m.Type = d.str()
			case "url":
				m.URL = d.str()
			case "media_type":
				m.MediaType = d.str()
			default:
				d.skip()
			}
		})
		out = append(out, m)
	}) && out == nil {
		out = []api.Media{}
	}
	return out
}

func (d *decoder) block(c *api.ContentBlock) {
	d.object(func(name string) {
		switch name {
		case "type":
			c.Type = d.str()
		case "text":
			c.Text = d.str()
		case "url":
			c.URL = d.str()
		case "media_type":
			c.MediaType = d.str()
		case "format":
			c.Format = d.str()
		case "data":
			c.Data = d.raw()
		case "id":
			c.ID = d.str()
		case "name":
			c.Name = d.str()
		case "input":
			c.Input = d.raw()
		case "tool_use_id":
			c.ToolUseID = d.str()
		case "content":
			c.Content = d.raw()
		case "is_error":
			if d.null() {
				c.IsError = nil
			} else {
				v := d.bool()
				c.IsError = &v
			}
		case "media":
			c.Media = d.media()
		default:
			d.skip()
		}
	})
}

func (d *decoder) message(m *api.Message) {
	d.object(func(name string) {
		switch name {
		case "role":
			m.Role = d.str()
		case "content":
			m.Content = nil
			if d.array(func() {
				m.Content = append(m.Content, api.ContentBlock{})
				d.block(&m.Content[len(m.Content)-1])
			}) && m.Content == nil {
				m.Content = []api.ContentBlock{}
			}
		default:
			d.skip()
		}
	})
}

func (d *decoder) messages() []api.Message {
	var out []api.Message
	if d.array(func() {
		out = append(out, api.Message{})
		d.message(&out[len(out)-1])
	}) && out == nil {
		out = []api.Message{}
	}
	return out
}

func (d *decoder) event(ev *api.Event) {
	d.object(func(name string) {
		switch name {
		case "sequence":
			ev.Sequence = d.uint()
		case "recorded_at_ms":
			ev.RecordedAtMs = d.int()
		case "event_type":
			ev.EventType = d.str()
		case "data":
			ev.Data = d.raw()
		case "origin":
			if d.null() {
				ev.Origin = nil
				return
			}
			if ev.Origin == nil {
				ev.Origin = &api.EventOrigin{}
			}
			o := ev.Origin
			d.object(func(name string) {
				switch name {
				case "kind":
					o.Kind = d.str()
				case "sequence":
					o.Sequence = d.uint()
				case "environment":
					if d.null() {
						o.Environment = nil
						return
					}
					if o.Environment == nil {
						o.Environment = &api.EnvironmentRef{}
					}
					r := o.Environment
					d.object(func(name string) {
						switch name {
						case "name":
							r.Name = d.str()
						case "sequence":
							r.Sequence = d.uint()
						default:
							d.skip()
						}
					})
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}

func (d *decoder) events() []api.Event {
	var out []api.Event
	if d.array(func() {
		out = append(out, api.Event{})
		d.event(&out[len(out)-1])
	}) && out == nil {
		out = []api.Event{}
	}
	return out
}

func (d *decoder) turnInput(in *api.TurnInput) {
	d.object(func(name string) {
		switch name {
		case "input":
			if d.null() {
				in.Input = nil
				return
			}
			if in.Input == nil {
				in.Input = &api.UserInput{}
			}
			u := in.Input
			d.object(func(name string) {
				switch name {
				case "message":
					u.Message = d.str()
				case "media":
					u.Media = d.media()
				default:
					d.skip()
				}
			})
		case "transcript":
			in.Transcript = d.messages()
		case "kv":
			if d.null() {
				in.KV = nil
				return
			}
			if in.KV == nil {
				in.KV = map[string]json.RawMessage{}
			}
			d.members(func(key string) { in.KV[key] = d.raw() })
		case "events":
			in.Events = d.events()
		case "configuration":
			in.Configuration = d.raw()
		case "system":
			in.System = d.str()
		case "tools":
			in.Tools = d.tools()
		case "runtime":
			d.object(func(name string) {
				switch name {
				case "logical_time_ms":
					in.Runtime.LogicalTimeMs = d.int()
				case "deterministic_seed":
					in.Runtime.DeterministicSeed = d.bytes()
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}

func (d *decoder) tools() []api.ActivationTool {
	var out []api.ActivationTool
	if d.array(func() {
		var t api.ActivationTool
		d.object(func(name string) {
			switch name {
			case "name":
				t.Name = d.str()
			case "description":
				t.Description = d.str()
			case "input_schema":
				t.InputSchema = d.raw()
			case "output_schema":
				t.OutputSchema = d.raw()
			case "environments":
				t.Environments = d.strings()
			default:
				d.skip()
			}
		})
		out = append(out, t)
	}) && out == nil {
		out = []api.ActivationTool{}
	}
	return out
}

func (d *decoder) modelResult(r *api.ModelResult) {
	d.object(func(name string) {
		switch name {
		case "message":
			d.message(&r.Message)
		case "stop_reason":
			r.StopReason = api.StopReason(d.str())
		case "usage":
			u := &r.Usage
			d.object(func(name string) {
				switch name {
				case "input_tokens":
					u.InputTokens = d.intPtr()
				case "output_tokens":
					u.OutputTokens = d.intPtr()
				case "cache_creation_input_tokens":
					u.CacheCreationInputTokens = d.intPtr()
				case "cache_read_input_tokens":
					u.CacheReadInputTokens = d.intPtr()
				case "reasoning_tokens":
					u.ReasoningTokens = d.intPtr()
				case "total_input_tokens":
					u.TotalInputTokens = d.intPtr()
				case "provider_cost_usd":
					u.ProviderCostUSD = d.floatPtr()
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
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

func (d *decoder) toolReturns() []api.ToolReturn {
	var out []api.ToolReturn
	if d.array(func() {
		var r api.ToolReturn
		d.object(func(name string) {
			switch name {
			case "call_id":
				r.CallID = d.str()
			case "sequence":
				r.Sequence = d.uint()
			case "events":
				r.Events = d.events()
			case "finished":
				r.Finished = d.bool()
			default:
				d.skip()
			}
		})
		out = append(out, r)
	}) && out == nil {
		out = []api.ToolReturn{}
	}
	return out
}

func (d *decoder) eventPage(p *api.EventPage) {
	d.object(func(name string) {
		switch name {
		case "events":
			p.Events = d.events()
		case "next_cursor":
			p.NextCursor = d.uint()
		default:
			d.skip()
		}
	})
}

func (d *decoder) hostError(e *HostError) {
	d.object(func(name string) {
		switch name {
		case "code":
			e.Code = d.str()
		case "message":
			e.Message = d.str()
		case "retryable":
			e.Retryable = d.bool()
		case "details":
			e.Details = d.raw()
		case "ref":
			v := d.uint()
			if v > 1<<32-1 {
				d.fail("ref out of range")
			}
			e.Ref = uint32(v)
		default:
			d.skip()
		}
	})
}

// kvReadResult reads a KVReadResult: nil when the key is absent, the
// literal null when null is stored.
func (d *decoder) kvReadResult() (value json.RawMessage) {
	d.object(func(name string) {
		if name == "value" {
			value = d.raw()
			return
		}
		d.skip()
	})
	return value
}

// configuration reads the default loop's Configuration.
func (d *decoder) configuration(c *Configuration) {
	d.object(func(name string) {
		if name == "max_steps" {
			c.MaxSteps = int(d.int())
			return
		}
		d.skip()
	})
}

// toolCallEnded reads the payload of tool_call_ended.
func (d *decoder) toolCallEnded(t *api.ToolCallEnded) {
	d.object(func(name string) {
		switch name {
		case "sequence":
			t.Sequence = d.uint()
		case "is_error":
			t.IsError = d.bool()
		case "outcome":
			o := &t.Outcome
			d.object(func(name string) {
				switch name {
				case "status":
					o.Status = d.str()
				case "value":
					o.Value = d.raw()
				case "message":
					o.Message = d.str()
				case "content":
					o.Content = d.raw()
				case "error":
					if d.null() {
						o.Error = nil
						return
					}
					if o.Error == nil {
						o.Error = &api.OutcomeError{}
					}
					oe := o.Error
					d.object(func(name string) {
						switch name {
						case "code":
							oe.Code = d.str()
						case "message":
							oe.Message = d.str()
						case "retryable":
							oe.Retryable = d.bool()
						case "details":
							oe.Details = d.raw()
						default:
							d.skip()
						}
					})
				default:
					d.skip()
				}
			})
		default:
			d.skip()
		}
	})
}

// outcome encodes a tool outcome envelope.
func (e *encoder) outcome(o *api.Outcome) {
	e.b = append(e.b, `{"status":`...)
	e.str(o.Status)
	if len(o.Value) > 0 {
		e.b = append(e.b, `,"value":`...)
		e.raw(o.Value)
	}
	if oe := o.Error; oe != nil {
		e.b = append(e.b, `,"error":{"code":`...)
		e.str(oe.Code)
		e.b = append(e.b, `,"message":`...)
		e.str(oe.Message)
		e.b = append(e.b, `,"retryable":`...)
		e.bool(oe.Retryable)
		if len(oe.Details) > 0 {
			e.b = append(e.b, `,"details":`...)
			e.raw(oe.Details)
		}
		e.b = append(e.b, '}')
	}
	if o.Message != "" {
		e.b = append(e.b, `,"message":`...)
		e.str(o.Message)
	}
	if len(o.Content) > 0 {
		e.b = append(e.b, `,"content":`...)
		e.raw(o.Content)
	}
	e.b = append(e.b, '}')
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
