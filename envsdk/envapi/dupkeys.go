package envapi

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// DuplicateKey reports the first object member name that appears twice in
// the same object of the JSON text data, with the dotted path of that
// object ("" for the top level). encoding/json keeps the last of
// duplicate members silently, so a document where two readers could see
// different values is refused by the strict decoders instead. Names are
// compared as encoding/json decodes them (escapes resolved, invalid UTF-8
// replaced). Malformed JSON answers false: the decoder reports it.
func DuplicateKey(data []byte) (path, key string, found bool) {
	if !json.Valid(data) {
		return "", "", false
	}
	d := dupScanner{data: data}
	d.value("", false)
	return d.path, d.key, d.found
}

// StrictMembers checks the member names of the JSON text data, which
// decodes into v, as the strict decoders do: it reports the first name
// repeated in one object (duplicate, as DuplicateKey) or else the first
// that matches a field of v only without regard to case (misnamed, as
// MisnamedField). The names are scanned once; v's fields are looked at
// only when a name holds an upper-case letter, an escape or a byte beyond
// ASCII, since the names of the protocol and of the API are lower-case.
func StrictMembers(data []byte, v any) (path, key string, duplicate, misnamed bool) {
	if !json.Valid(data) {
		return "", "", false, false
	}
	d := dupScanner{data: data}
	d.value("", false)
	if d.found {
		return d.path, d.key, true, false
	}
	if !d.foldable {
		return "", "", false, false
	}
	path, key, misnamed = MisnamedField(data, v)
	return path, key, false, misnamed
}

// dupScanner walks a valid JSON text once, without decoding its values.
type dupScanner struct {
	data      []byte
	i         int
	found     bool
	path, key string
	// keys are the member names from the top level down to the object
	// or array being scanned; the dotted path is built from them only for
	// a finding, so that deep nesting costs no more than its bytes.
	keys []string
	// foldable: some member name holds an escape, an upper-case ASCII
	// letter or a byte beyond ASCII, so encoding/json may match it to a
	// field whose name differs from it.
	foldable bool
}

// mayFold tells whether a member name's raw bytes could match a
// lower-case field name other than itself.
func mayFold(raw []byte, plain bool) bool {
	if !plain {
		return true
	}
	for _, c := range raw {
		if ('A' <= c && c <= 'Z') || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

func (d *dupScanner) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// str skips the string at d.i and answers its raw bytes (quotes included)
// and whether it holds no escape.
func (d *dupScanner) str() ([]byte, bool) {
	start := d.i
	plain := true
	for d.i++; ; d.i++ {
		switch d.data[d.i] {
		case '\\':
			plain = false
			d.i++
		case '"':
			d.i++
			return d.data[start:d.i], plain
		}
	}
}

// name answers how encoding/json decodes the member name raw.
func name(raw []byte, plain bool) string {
	inner := raw[1 : len(raw)-1]
	if plain && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// dottedPath joins member names with dots, as paths are written
// elsewhere: a name after an empty path starts it afresh.
func dottedPath(keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// value skips the value at d.i (after white space), checking the objects
// in it. The value is the member named key of the object being scanned
// (with member), or an element of an array (or the top level).
func (d *dupScanner) value(key string, member bool) {
	d.space()
	switch c := d.data[d.i]; c {
	case '{', '[':
		if member {
			d.keys = append(d.keys, key)
			defer func() { d.keys = d.keys[:len(d.keys)-1] }()
		}
		if c == '{' {
			d.object()
		} else {
			d.array()
		}
	case '"':
		d.str()
	default: // number, true, false, null
		for d.i < len(d.data) {
			switch d.data[d.i] {
			case ',', ']', '}', ' ', '\t', '\r', '\n':
				return
			}
			d.i++
		}
	}
}

func (d *dupScanner) array() {
	d.i++ // '['
	for !d.found {
		d.space()
		switch d.data[d.i] {
		case ']':
			d.i++
			return
		case ',':
			d.i++
		}
		d.space()
		if d.data[d.i] == ']' { // an empty array
			d.i++
			return
		}
		d.value("", false)
	}
}

// object checks the member names of the object at d.i (and of the
// objects in its values); d.keys lead to it.
func (d *dupScanner) object() {
	d.i++ // '{'
	var names []string
	var seen map[string]struct{} // for objects with many members
	for !d.found {
		d.space()
		switch d.data[d.i] {
		case '}':
			d.i++
			return
		case ',':
			d.i++
			d.space()
		}
		raw, plain := d.str()
		d.foldable = d.foldable || mayFold(raw, plain)
		k := name(raw, plain)
		dup := false
		if seen != nil {
			_, dup = seen[k]
			seen[k] = struct{}{}
		} else {
			for _, n := range names {
				dup = dup || n == k
			}
			if names = append(names, k); len(names) > 16 {
				seen = make(map[string]struct{}, 2*len(names))
				for _, n := range names {
					seen[n] = struct{}{}
				}
			}
		}
		if dup {
			d.found, d.path, d.key = true, dottedPath(d.keys), k
			return
		}
		d.space()
		d.i++ // ':'
		d.value(k, true)
	}
}
