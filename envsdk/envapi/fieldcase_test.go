package envapi

import (
	"errors"
	"testing"
)

// TestStrictFieldNamesAreCaseSensitive checks that the strict decoders take
// a member whose name differs from a field's only in case for an unknown
// field, at any depth, and leave free-form values alone.
func TestStrictFieldNamesAreCaseSensitive(t *testing.T) {
	refused := []struct{ doc, field string }{
		{`{"OPERATION":"list"}`, "OPERATION"},
		{`{"operation":"get","environment":{"name":"e","Sequence":1}}`, "environment.Sequence"},
		{`{"operation":"list","Operation":"get"}`, "Operation"},
	}
	for _, c := range refused {
		_, err := DecodeControlRequest([]byte(c.doc))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("DecodeControlRequest(%s) = %v, want an unknown field %q", c.doc, err, c.field)
		}
	}
	if _, err := DecodeControlRequest([]byte(`{"operation":"call","environment":{"name":"e","sequence":1},"method":"m","input":{"Operation":1,"operation":2}}`)); err != nil {
		t.Errorf("free-form input refused: %v", err)
	}
}

// TestStrictMembersFoldsAsTheDecoder: a name that encoding/json matches to
// a field through Unicode folding (the Kelvin sign for k, the long s for
// s) or an escape is refused as misnamed too, and a repeated name is
// reported as a duplicate before anything else.
func TestStrictMembersFoldsAsTheDecoder(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type doc struct {
		Inner inner  `json:"inner"`
		Ask   string `json:"ask"`
	}
	cases := []struct {
		text          string
		path, key     string
		dup, misnamed bool
	}{
		{`{"inner":{"kind":"a"},"ask":"b"}`, "", "", false, false},
		{`{"inner":{"\u212aind":"a"}}`, "inner", "\u212aind", false, true},
		{"{\"inner\":{\"\u212aind\":\"a\"}}", "inner", "\u212aind", false, true},
		{"{\"a\u017fk\":\"b\"}", "", "a\u017fk", false, true},
		{`{"\u0061sk":"b"}`, "", "", false, false},
		{`{"ask":"b","ask":"c","ASK":"d"}`, "", "ask", true, false},
	}
	for _, c := range cases {
		path, key, dup, misnamed := StrictMembers([]byte(c.text), &doc{})
		if path != c.path || key != c.key || dup != c.dup || misnamed != c.misnamed {
			t.Errorf("StrictMembers(%s) = %q %q %v %v, want %q %q %v %v", c.text, path, key, dup, misnamed, c.path, c.key, c.dup, c.misnamed)
		}
		var v doc
		err := strictDecode([]byte(c.text), &v, "", true)
		if wantErr := c.dup || c.misnamed; (err != nil) != wantErr {
			t.Errorf("strictDecode(%s) = %v, want an error: %v", c.text, err, wantErr)
		}
	}
}
