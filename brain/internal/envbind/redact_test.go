package envbind

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRedactorJSON: a secret is removed wherever an answer quotes it, as
// its bytes or written with JSON escapes; an answer without one comes back
// byte for byte.
func TestRedactorJSON(t *testing.T) {
	r := redactor{"tok_0123456789abcdef", "p<a>ss&\"w/rd"}
	for _, c := range []struct {
		name, raw string
		changed   bool
	}{
		{"no secret, escapes", `{"out":"line\nnext","n":1.50}`, false},
		{"no secret, plain", `{"out":"hello"}`, false},
		{"token as a value", `{"echo":"Bearer tok_0123456789abcdef"}`, true},
		{"token as a key", `{"tok_0123456789abcdef":1}`, true},
		{"credential escaped for HTML", `["p\u003ca\u003ess\u0026\"w/rd"]`, true},
		{"credential with an escaped slash", `"p<a>ss&\"w\/rd"`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := r.json(json.RawMessage(c.raw))
			if !c.changed {
				if string(out) != c.raw {
					t.Fatalf("answer without a secret = %s, want %s unchanged", out, c.raw)
				}
				return
			}
			if !json.Valid(out) || !strings.Contains(string(out), redacted) {
				t.Fatalf("redacted %s = %s", c.raw, out)
			}
			var v any
			_ = json.Unmarshal(out, &v)
			decoded := fmt.Sprint(v)
			for _, s := range r {
				if strings.Contains(string(out), s) || strings.Contains(decoded, s) {
					t.Fatalf("%s still holds %q: %s", c.raw, s, out)
				}
			}
		})
	}
}

// TestRedactorOverlappingSecrets: of two secrets one of which holds the
// other (a short credential inside a longer one, in whichever order they
// are listed), the longer is removed whole, not left with only the
// shorter cut out of it.
func TestRedactorOverlappingSecrets(t *testing.T) {
	for _, r := range []redactor{{"cred", "tool-credential-2"}, {"tool-credential-2", "cred"}} {
		got := r.string("key tool-credential-2, then cred")
		if want := "key [redacted], then [redacted]"; got != want {
			t.Errorf("%q redacts to %q, want %q", r, got, want)
		}
		out := r.json(json.RawMessage(`{"k":"tool-credential-2"}`))
		if string(out) != `{"k":"[redacted]"}` {
			t.Errorf("%q redacts JSON to %s", r, out)
		}
	}
}

// TestRedactorJSONUnicodeEscapes: a JSON encoder may write any character
// as a \u escape (some escape "=" or "'" for HTML), so a secret of plain
// characters written so is found and removed too.
func TestRedactorJSONUnicodeEscapes(t *testing.T) {
	r := redactor{"c2VjcmV0LWtleQ==", "tok_0123456789abcdef"}
	for _, raw := range []string{
		`{"message":"key c2VjcmV0LWtleQ\u003d\u003d refused"}`,
		`["\u0074ok_0123456789abcdef"]`,
		`{"tok_0123456789abcde\u0066":1}`,
	} {
		out := r.json(json.RawMessage(raw))
		var v any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s redacts to %s: %v", raw, out, err)
		}
		decoded, _ := json.Marshal(v)
		for _, s := range r {
			if strings.Contains(string(decoded), s) {
				t.Errorf("%s redacts to %s, which still holds %q", raw, out, s)
			}
		}
	}
}
