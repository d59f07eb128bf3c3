package model

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzToolResultText: a tool result's content is sent as the value of a
// JSON string, and as its JSON text otherwise, whether or not the string
// is read without decoding.
func FuzzToolResultText(f *testing.F) {
	for _, s := range []string{`"plain"`, `""`, ` "padded" `, `"esc\"aped"`, `"tab\there"`, `"caf\u00e9"`, "\"caf\xc3\xa9\"",
		"\"bad \xff utf8\"", "\"raw\ttab\"", `"unclosed`, `"a" "b"`, `{"x":1}`, `[1,"a"]`, `12`, `null`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		got := toolResultText(content)
		c := bytes.TrimSpace(content)
		want := string(c)
		var s string
		if len(c) > 0 && c[0] == '"' && json.Unmarshal(c, &s) == nil {
			want = s
		}
		if got != want {
			t.Fatalf("toolResultText(%q) = %q, want %q", content, got, want)
		}
	})
}
