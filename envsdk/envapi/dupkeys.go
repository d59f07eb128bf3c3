package envapi

import (
	"encoding/json"
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
	d.value("", "", false)
	return d.path, d.key, d.found
}

// dupScanner walks a valid JSON text once, without decoding its values.
type dupScanner struct {
	data      []byte
	i         int
	found     bool
	path, key string
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

// value skips the value at d.i (after white space), checking the objects
// in it. The value is the member named key of the object at path (with
// member), or an element of the array at path (or the top level).
func (d *dupScanner) value(path, key string, member bool) {
	d.space()
	switch c := d.data[d.i]; c {
	case '{', '[':
		if member && path != "" {
			path += "." + key
		} else if member {
			path = key
		}
		if c == '{' {
			d.object(path)
		} else {
			d.array(path)
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

func (d *dupScanner) array(path string) {
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
		d.value(path, "", false)
	}
}

// object checks the member names of the object at d.i (and of the
// objects in its values); path is its own path.
func (d *dupScanner) object(path string) {
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
			d.found, d.path, d.key = true, path, k
			return
		}
		d.space()
		d.i++ // ':'
		d.value(path, k, true)
	}
}
