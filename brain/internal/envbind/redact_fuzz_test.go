package envbind

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRedactorJSON: whatever JSON a provider answers, and however it
// escapes a secret in it, the redacted answer is JSON and none of its
// strings (keys or values) holds the secret. Secrets are of the
// characters tokens are made of.
func FuzzRedactorJSON(f *testing.F) {
	f.Add(`{"echo":"Bearer tok_0123456789abcdef"}`, "tok_0123456789abcdef")
	f.Add(`["\u0074ok_0123"]`, "tok_0123")
	f.Add(`{"c2VjcmV0\u002dkey":[1,"x"]}`, "c2VjcmV0-key")
	f.Add(`{"out":"line\nnext","n":1.50}`, "secret")
	f.Fuzz(func(t *testing.T, raw, secret string) {
		if secret == "" || strings.Contains("redacted", secret) || strings.Trim(secret, tokenAlphabet) != "" || !json.Valid([]byte(raw)) {
			t.Skip()
		}
		out := redactor{secret}.json(json.RawMessage(raw))
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s redacts to %s, which is no JSON: %v", raw, out, err)
		}
		walkStrings(v, func(s string) {
			if strings.Contains(s, secret) {
				t.Fatalf("%s redacts to %s, which still holds %q", raw, out, secret)
			}
		})
	})
}

// tokenAlphabet is the characters of base64url and of most API keys.
const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// walkStrings calls each with every string of v, keys included.
func walkStrings(v any, each func(string)) {
	switch x := v.(type) {
	case string:
		each(x)
	case []any:
		for _, e := range x {
			walkStrings(e, each)
		}
	case map[string]any:
		for k, e := range x {
			each(k)
			walkStrings(e, each)
		}
	}
}
