package tool

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// The run path encodes and decodes its few small documents by hand: a
// fresh instance per invocation would pay encoding/json's reflection and
// its cold type cache on every run.

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
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
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}

// appendRaw appends a JSON value, or null for an empty one; a value that
// is not valid JSON fails.
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(dst, "null"...), nil
	}
	if !json.Valid(raw) {
		return dst, errors.New("invalid JSON value")
	}
	return append(dst, raw...), nil
}

// appendOutcome appends o as an Outcome envelope.
func appendOutcome(dst []byte, o *api.Outcome) ([]byte, error) {
	var err error
	dst = append(dst, `{"status":`...)
	dst = appendString(dst, o.Status)
	if len(o.Value) > 0 {
		dst = append(dst, `,"value":`...)
		if dst, err = appendRaw(dst, o.Value); err != nil {
			return dst, err
		}
	}
	if e := o.Error; e != nil {
		dst = append(dst, `,"error":{"code":`...)
		dst = appendString(dst, e.Code)
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, e.Message)
		dst = append(dst, `,"retryable":`...)
		dst = strconv.AppendBool(dst, e.Retryable)
		if len(e.Details) > 0 {
			dst = append(dst, `,"details":`...)
			if dst, err = appendRaw(dst, e.Details); err != nil {
				return dst, err
			}
		}
		dst = append(dst, '}')
	}
	if o.Message != "" {
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, o.Message)
	}
	if len(o.Content) > 0 {
		dst = append(dst, `,"content":`...)
		if dst, err = appendRaw(dst, o.Content); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// encodeOutcome encodes an optional outcome (null for nil).
func encodeOutcome(o *api.Outcome) ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	return appendOutcome(make([]byte, 0, 64+len(o.Value)+len(o.Content)), o)
}

// scanner reads one JSON document.
type scanner struct {
	b   []byte
	i   int
	err error
}

func (s *scanner) fail(msg string) {
	if s.err == nil {
		s.err = errors.New(msg + " at offset " + strconv.Itoa(s.i))
	}
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// value skips one value and answers its bytes.
func (s *scanner) value() []byte {
	s.ws()
	start := s.i
	if s.i >= len(s.b) {
		s.fail("unexpected end")
		return nil
	}
	switch c := s.b[s.i]; {
	case c == '{' || c == '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			s.fail("unterminated value")
		}
	case c == '"':
		s.str()
	default:
		for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' && s.b[s.i] != ' ' && s.b[s.i] != '\n' && s.b[s.i] != '\t' && s.b[s.i] != '\r' {
			s.i++
		}
	}
	if s.err != nil {
		return nil
	}
	v := s.b[start:s.i]
	if !json.Valid(v) {
		s.fail("invalid value")
		return nil
	}
	return v
}

// str skips a string and answers its raw bytes, quotes included.
func (s *scanner) str() []byte {
	start := s.i
	s.i++
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
			continue
		case '"':
			s.i++
			return s.b[start:s.i]
		}
		s.i++
	}
	s.fail("unterminated string")
	return nil
}

// object calls member for each member of an object.
func (s *scanner) object(member func(key string)) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		s.fail("want an object")
		return
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return
	}
	for s.err == nil {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			s.fail("want a member name")
			return
		}
		raw := s.str()
		var key string
		if err := json.Unmarshal(raw, &key); err != nil && s.err == nil {
			s.fail("invalid member name")
			return
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			s.fail("want ':'")
			return
		}
		s.i++
		member(key)
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return
		}
		s.fail("want ',' or '}'")
	}
}

func (s *scanner) end() error {
	s.ws()
	if s.err == nil && s.i != len(s.b) {
		s.fail("trailing data")
	}
	return s.err
}
