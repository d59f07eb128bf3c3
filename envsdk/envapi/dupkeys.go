package envapi

import (
	"bytes"
	"encoding/json"
)

// DuplicateKey reports the first object member name that appears twice in
// the same object of the JSON text data, with the dotted path of that
// object ("" for the top level). encoding/json keeps the last of
// duplicate members silently, so a document where two readers could see
// different values is refused by the strict decoders instead. Malformed
// JSON answers false: the decoder reports it.
func DuplicateKey(data []byte) (path, key string, found bool) {
	type level struct {
		object    bool
		expectKey bool
		keys      map[string]struct{}
		path, key string // the path of this level and its last key
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*level
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	childPath := func() string {
		n := len(stack)
		if n == 0 {
			return ""
		}
		top := stack[n-1]
		if !top.object {
			return top.path
		}
		if top.path == "" {
			return top.key
		}
		return top.path + "." + top.key
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				l := &level{object: d == '{', expectKey: d == '{', path: childPath()}
				if l.object {
					l.keys = map[string]struct{}{}
				}
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].expectKey = false
				}
				stack = append(stack, l)
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
			top := stack[n-1]
			k, _ := tok.(string)
			if _, dup := top.keys[k]; dup {
				return top.path, k, true
			}
			top.keys[k] = struct{}{}
			top.key, top.expectKey = k, false
			continue
		}
		valueDone()
	}
}
