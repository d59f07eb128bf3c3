package guestjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// tricky holds every kind of byte the string codec treats specially.
const tricky = "a<b>&c \"q\" \\ / \b\f\n\r\t \x00\x1f\x7f é € 😀 \u2028\u2029 \xff\xfe bad \xe2\x82"

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", tricky, "\u2028", "\xed\xa0\x80", "<script>&amp;</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		got := MarshalString(s)
		if string(got) != string(want) {
			t.Fatalf("encode %q:\n got %s\nwant %s", s, got, want)
		}
		// Decoding s as the inside of a string literal.
		lit := []byte(`"` + s + `"`)
		var jv string
		jerr := json.Unmarshal(lit, &jv)
		var v string
		d := Decoder{Data: lit}
		v = d.Str()
		err := d.End()
		if (err != nil) != (jerr != nil) || (err == nil && v != jv) {
			t.Fatalf("decode %q: codec %q %v, encoding/json %q %v", lit, v, err, jv, jerr)
		}
	})
}

func FuzzRawMessage(f *testing.F) {
	for _, s := range []string{"null", " { \"a\" : [ 1 , 2 ] } ", `"<&>"`, "\"\u2028\"", "[1,", `{"a":"\u003c"}`, "-0.5e+3", "01", "tru", `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) == 0 {
			return
		}
		want, jerr := json.Marshal(json.RawMessage(raw))
		e := Encoder{}
		e.Raw(raw)
		got, err := e.B, e.Err
		if (err != nil) != (jerr != nil) {
			t.Fatalf("%q: codec error %v, encoding/json error %v", raw, err, jerr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
		}
		// Reading the same bytes as a value.
		var jv json.RawMessage
		jerr = json.Unmarshal(raw, &jv)
		var v json.RawMessage
		d := Decoder{Data: raw}
		v = d.Raw()
		err = d.End()
		if (err != nil) != (jerr != nil) {
			t.Fatalf("%q: codec error %v, encoding/json error %v", raw, err, jerr)
		}
		if err == nil && strings.TrimSpace(string(v)) != strings.TrimSpace(string(jv)) {
			t.Fatalf("%q: got %s want %s", raw, v, jv)
		}
	})
}
