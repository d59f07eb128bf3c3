package guestjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// nested answers a value nested depth arrays (or objects) deep.
func nested(depth int, object bool) string {
	if object {
		return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	}
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// TestSyntaxAsEncodingJSON holds the decoder and the RawMessage encoder
// to encoding/json on input it refuses: member names that are not
// strings and nesting deeper than its limit.
func TestSyntaxAsEncodingJSON(t *testing.T) {
	cases := []string{
		`{null:1}`,
		`{"a":{null:2}}`,
		`[{null:[]}]`,
		`{true:1}`,
		`{1:1}`,
		`{"a":1,null:2}`,
		nested(10000, false),
		nested(10001, false),
		nested(10000, true),
		nested(10001, true),
		"[" + nested(10000, true) + "]",
	}
	for _, s := range cases {
		_, merr := json.Marshal(json.RawMessage(s))
		var v any
		uerr := json.Unmarshal([]byte(s), &v)
		if (merr != nil) != (uerr != nil) {
			t.Fatalf("%.30q: encoding/json disagrees with itself: %v, %v", s, merr, uerr)
		}
		e := Encoder{}
		e.Raw(json.RawMessage(s))
		if (e.Err != nil) != (merr != nil) {
			t.Errorf("%.30q: encode error %v, encoding/json %v", s, e.Err, merr)
		}
		if e.Err != nil && string(e.B) != "null" {
			t.Errorf("%.30q: encoded %.30q on error, want null", s, e.B)
		}
		d := Decoder{Data: []byte(s)}
		d.Raw()
		if err := d.End(); (err != nil) != (uerr != nil) {
			t.Errorf("%.30q: decode error %v, encoding/json %v", s, err, uerr)
		}
		// The depth counts through Object and Array as through Skip.
		d = Decoder{Data: []byte(s)}
		var walk func()
		walk = func() {
			switch d.Peek() {
			case '[':
				d.Array(walk)
			case '{':
				d.Object(func(string) { walk() })
			default:
				d.Skip()
			}
		}
		walk()
		if err := d.End(); (err != nil) != (uerr != nil) {
			t.Errorf("%.30q: typed decode error %v, encoding/json %v", s, err, uerr)
		}
	}
}
