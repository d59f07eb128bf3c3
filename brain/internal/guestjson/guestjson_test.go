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
	for _, s := range []string{"null", " { \"a\" : [ 1 , 2 ] } ", `"<&>"`, "\"\u2028\"", "[1,", `{"a":"\u003c"}`, "-0.5e+3", "01", "tru", `"\ud800"`, `{null:1}`, `[{"a":{null:[]}}]`} {
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

// TestStringWords puts each byte the string codec treats specially at
// every offset of strings around the eight-byte steps of its loops, and
// holds encoding, decoding, skipping and compacting to encoding/json.
func TestStringWords(t *testing.T) {
	specials := []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", "\x80", "\xff", "é", "€", "\u2028", "\u2029", "\xe2", "\xe2\x80", "😀", "\n"}
	for n := 0; n <= 24; n++ {
		for p := 0; p <= n; p++ {
			for _, sp := range specials {
				s := strings.Repeat("a", p) + sp + strings.Repeat("b", n-p)
				want, _ := json.Marshal(s)
				if got := MarshalString(s); string(got) != string(want) {
					t.Fatalf("encode %q:\n got %s\nwant %s", s, got, want)
				}
				// The encoded string read back, read over and compacted.
				d := Decoder{Data: want}
				var jv string
				if err := json.Unmarshal(want, &jv); err != nil {
					t.Fatal(err)
				}
				if v := d.Str(); d.End() != nil || v != jv {
					t.Fatalf("decode %s: got %q, %v; want %q", want, v, d.End(), jv)
				}
				d = Decoder{Data: want}
				if d.SkipStr(); d.End() != nil {
					t.Fatalf("skip %s: %v", want, d.End())
				}
				// The raw bytes as a string literal, where they are valid
				// JSON: the same value or the same error as encoding/json.
				lit := []byte(`["` + s + `"]`)
				var jl []string
				jerr := json.Unmarshal(lit, &jl)
				d = Decoder{Data: lit[1 : len(lit)-1]}
				v := d.Str()
				if err := d.End(); (err != nil) != (jerr != nil) || (err == nil && v != jl[0]) {
					t.Fatalf("decode %q: codec %q %v, encoding/json %q %v", lit, v, err, jl, jerr)
				}
				d = Decoder{Data: lit[1 : len(lit)-1]}
				if d.SkipStr(); (d.End() != nil) != (jerr != nil) {
					t.Fatalf("skip %q: codec %v, encoding/json %v", lit, d.End(), jerr)
				}
				if jerr == nil {
					wantRaw, err := json.Marshal(json.RawMessage(lit))
					if err != nil {
						t.Fatal(err)
					}
					if got := AppendCompact(nil, lit); string(got) != string(wantRaw) {
						t.Fatalf("compact %q:\n got %s\nwant %s", lit, got, wantRaw)
					}
				}
			}
		}
	}
}
