package envapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
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

// duplicateKeyByTokens is the reference DuplicateKey is checked against: a
// walk of encoding/json's tokens (the implementation before the scanner).
func duplicateKeyByTokens(data []byte) (path, key string, found bool) {
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

// FuzzDuplicateKeyMatchesTokens: on valid JSON the scanner answers exactly
// what a walk of encoding/json's tokens answers (the same first duplicate,
// path and name, escapes and invalid UTF-8 in names decoded as the decoder
// does); malformed JSON answers false.
func FuzzDuplicateKeyMatchesTokens(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"c":2}]}}`, `[]`, `"x"`, `{"a":`,
		`{"a":1,"\u0061":2}`, `{"":{"":{"x":1,"x":2}}}`, `[[{"k":[{"k":1}],"k":2}]]`, "{\"\xff\":1,\"\xfe\":2}",
		`{"a":{"b":{}},"a":0}`, ` { "s" : "a\\\"" , "t" : [ "a" , { } ] , "s" : 1 } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, k, d := DuplicateKey(data)
		if !json.Valid(data) {
			if d {
				t.Fatalf("DuplicateKey(%q) = %q %q on malformed JSON", data, p, k)
			}
			return
		}
		if wp, wk, wd := duplicateKeyByTokens(data); p != wp || k != wk || d != wd {
			t.Fatalf("DuplicateKey(%q) = %q, %q, %v; the token walk answers %q, %q, %v", data, p, k, d, wp, wk, wd)
		}
	})
}

// TestDuplicateKeyManyMembers: objects past the linear search find
// duplicates too.
func TestDuplicateKeyManyMembers(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"o":{`)
	for i := range 40 {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	b.WriteString(`"k33":0}}`)
	if p, k, d := DuplicateKey(b.Bytes()); !d || p != "o" || k != "k33" {
		t.Fatalf("DuplicateKey = %q %q %v, want o k33", p, k, d)
	}
	if _, _, d := DuplicateKey(bytes.Replace(b.Bytes(), []byte(`"k33":0`), []byte(`"k40":0`), 1)); d {
		t.Fatal("a duplicate reported among distinct names")
	}
}

// TestDuplicateKeyDeepNestingIsLinear: the dotted path of a finding is
// built only for the finding, so a document nested 10,000 deep (what the
// decoders allow) is scanned without building a path per level, which
// cost quadratic time and memory (about 100 MB here).
func TestDuplicateKeyDeepNestingIsLinear(t *testing.T) {
	const depth = 9990
	doc := []byte(strings.Repeat(`{"a":`, depth) + `{"k":1,"k":2}` + strings.Repeat("}", depth))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	path, key, found := DuplicateKey(doc)
	runtime.ReadMemStats(&after)
	if !found || key != "k" || len(path) != 2*depth-1 || !strings.HasPrefix(path, "a.a.") {
		t.Fatalf("DuplicateKey = %d-byte path, %q, %v", len(path), key, found)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("scanning %d bytes nested %d deep allocated %d bytes", len(doc), depth, n)
	}
}
