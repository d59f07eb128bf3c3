package session

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaSubset(t *testing.T) {
	schema := `{"type":"object","required":["path"],"additionalProperties":false,
		"properties":{"path":{"type":"string","minLength":1,"maxLength":5},
		"mode":{"enum":["r","w"]},"n":{"type":"integer","minimum":1,"maximum":3},
		"tags":{"type":"array","items":{"type":"string"},"maxItems":2},
		"x":{"type":["number","null"],"exclusiveMinimum":0}}}`
	s, err := CompileSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ doc, err string }{
		{`{"path":"a"}`, ""},
		{`{"path":"a","mode":"w","n":2.0,"tags":["x","y"],"x":null}`, ""},
		{`{"path":"a","x":0.5}`, ""},
		{`{}`, `property "path" is required`},
		{`{"path":""}`, "shorter than 1"},
		{`{"path":"héllo"}`, ""},
		{`{"path":"abcdef"}`, "longer than 5"},
		{`{"path":"a","other":1}`, `property "other" is not allowed`},
		{`{"path":"a","mode":"x"}`, "not one of"},
		{`{"path":"a","n":2.5}`, "not of type integer"},
		{`{"path":"a","n":4}`, "above the maximum"},
		{`{"path":"a","n":0}`, "below the minimum"},
		{`{"path":"a","tags":["x",1]}`, "$.tags[1]: integer is not of type string"},
		{`{"path":"a","tags":["x","y","z"]}`, "more than 2"},
		{`{"path":"a","x":0}`, "not above 0"},
		{`[]`, "array is not of type object"},
	} {
		err := s.Validate(json.RawMessage(tc.doc))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.doc, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.doc, err, tc.err)
		}
	}
	for _, raw := range []string{``, `null`, `{}`, `true`, `{"description":"anything","format":"uri"}`} {
		s, err := CompileSchema(json.RawMessage(raw))
		if err != nil || s.Validate(json.RawMessage(`{"a":[1,"x",null]}`)) != nil {
			t.Errorf("schema %q should accept everything (%v)", raw, err)
		}
	}
	never, _ := CompileSchema(json.RawMessage(`false`))
	if never.Validate(json.RawMessage(`1`)) == nil {
		t.Error("false schema accepted a value")
	}
	for _, bad := range []string{`{"type":"thing"}`, `{"required":"a"}`, `{"minLength":-1}`, `3`, `{"properties":{"a":3}}`} {
		if _, err := CompileSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("schema %s compiled", bad)
		}
	}
	// enum compares canonical JSON: key order and number spelling do not matter.
	e, _ := CompileSchema(json.RawMessage(`{"enum":[{"a":1,"b":[2]}]}`))
	if err := e.Validate(json.RawMessage(`{"b":[2.0],"a":1}`)); err != nil {
		t.Error(err)
	}
}
