package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// byteOrderMark is what some editors write at the start of a UTF-8 file;
// JSON has no place for it.
const byteOrderMark = "\xEF\xBB\xBF"

// checkText refuses b, a providers file, when it is not one JSON value
// of UTF-8 text, saying where it goes wrong.
func checkText(b []byte) error {
	if bytes.HasPrefix(b, []byte(byteOrderMark)) {
		return errors.New("the file starts with a byte order mark; save it as UTF-8 without one")
	}
	if !utf8.Valid(b) {
		at := 0
		for at < len(b) {
			r, n := utf8.DecodeRune(b[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		line, col := position(b, int64(at))
		return fmt.Errorf("line %d, column %d: the file is not UTF-8 text", line, col)
	}
	if len(bytes.TrimLeft(b, " \t\r\n")) == 0 {
		return errors.New(`the file is empty; want a JSON object {"providers":[...]}`)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			line, col := position(b, se.Offset-1) // the byte read last
			return fmt.Errorf("line %d, column %d: %w", line, col, err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			line, col := position(b, int64(len(b)))
			return fmt.Errorf("the file ends (line %d, column %d) before its JSON value does", line, col)
		}
		return err
	}
	return nil
}

// position answers the line and column (of characters, from 1) of the
// byte at offset in b.
func position(b []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(b)))
	before := b[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

// typeError says of a member of b, which holds a value of another type
// than its field's, where it is and what it should hold, in the terms of
// JSON rather than of Go.
func typeError(b []byte, te *json.UnmarshalTypeError) error {
	at := pathAt(b, te.Offset)
	if at == "" {
		at = te.Field
	}
	got := te.Value
	if got != "" {
		got = article(got)
	}
	line, col := position(b, te.Offset-1) // the value's last byte, or the brace or bracket opening it
	return fmt.Errorf("%s (line %d, column %d): want %s, got %s", at, line, col, jsonKind(te.Type), got)
}

// jsonKind names the JSON values a Go type decodes, as the environment
// protocol names them, with their article ("an integer").
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	return article(envapi.JSONKind(t))
}

// article puts "a" or "an" before what encoding/json names a value
// ("number", "number 1.5", "object", "string").
func article(v string) string {
	switch v[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + v
	}
	return "a " + v
}

// pathAt answers the path (providers[1].models[0].id) of the value of b,
// a valid JSON text, that ends at offset, or whose object or array opens
// just before it: where encoding/json reports a value of the wrong type.
// It answers "" when there is none.
func pathAt(b []byte, offset int64) string {
	type level struct {
		object  bool
		wantKey bool // in an object, before a member's name
		key     string
		index   int // in an array, the element's
	}
	var stack []level
	// ended ends a value in the object or array holding it.
	ended := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	path := func() string {
		var s []byte
		for _, l := range stack {
			if l.object {
				if len(s) > 0 {
					s = append(s, '.')
				}
				s = append(s, l.key...)
			} else {
				s = append(s, '[')
				s = strconv.AppendInt(s, int64(l.index), 10)
				s = append(s, ']')
			}
		}
		return string(s)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		n := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:n-1]
			ended()
			continue
		}
		if n > 0 && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			continue
		}
		if dec.InputOffset() == offset {
			return path()
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, level{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, level{})
		default:
			ended()
		}
	}
}

// unknownMember answers the first member of b, a valid JSON text that
// decodes into t, whose name is no field's of the object holding it
// (names compared exactly), with the path of that object ("" for the
// top level).
func unknownMember(b []byte, t reflect.Type) (at, key string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	at, key, found, _ = walkMembers(dec, t, "")
	return at, key, found
}

// walkMembers reads the next value of dec, which decodes into t (nil: a
// value not looked into), as unknownMember does.
func walkMembers(dec *json.Decoder, t reflect.Type, path string) (at, key string, found bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return "", "", false, err
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return "", "", false, err
			}
			name, _ := k.(string)
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[name]; !ok {
					return path, name, true, nil
				}
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if at, key, found, err = walkMembers(dec, ft, sub); found || err != nil {
				return at, key, found, err
			}
		}
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if at, key, found, err = walkMembers(dec, et, path+"["+strconv.Itoa(i)+"]"); found || err != nil {
				return at, key, found, err
			}
		}
	default:
		return "", "", false, nil
	}
	_, err = dec.Token() // the closing brace or bracket
	return "", "", false, err
}

// jsonFields maps the member names of struct t to the types of their
// fields.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
