package envapi

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	for _, c := range []struct {
		in, path, key string
		dup           bool
	}{
		{`{"a":1,"b":2}`, "", "", false},
		{`{"a":1,"a":2}`, "", "a", true},
		{`{"a":{"b":1,"b":2}}`, "a", "b", true},
		{`{"a":[{"x":1},{"x":2}]}`, "", "", false},
		{`{"a":[{"x":1,"x":2}]}`, "a", "x", true},
		{`{"a":{"b":1},"c":{"b":1}}`, "", "", false},
		{`{"a":{"b":{}},"a":0}`, "", "a", true},
		{`[{"k":"k","k":"v"}]`, "", "k", true},
		{`{"s":"a","t":["a","a"]}`, "", "", false},
		{`{"a":1,"b"`, "", "", false}, // malformed: the decoder reports it
	} {
		path, key, dup := DuplicateKey([]byte(c.in))
		if dup != c.dup || path != c.path || key != c.key {
			t.Errorf("DuplicateKey(%s) = %q, %q, %v; want %q, %q, %v", c.in, path, key, dup, c.path, c.key, c.dup)
		}
	}
}

func TestStrictRefusesDuplicateKeys(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	err := Strict([]byte(`{"a":1,"a":2}`), &v)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Reason != `duplicate key "a"` {
		t.Fatalf("Strict with a duplicate key = %v", err)
	}
}

// FuzzDuplicateKey: never panics, and what encoding/json makes of a
// document (keeping the last duplicate) has no duplicate left.
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `[]`, `"x"`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		DuplicateKey(data)
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		again, _ := json.Marshal(v)
		if _, _, d := DuplicateKey(again); d {
			t.Fatalf("re-encoded %s has a duplicate key", again)
		}
	})
}
