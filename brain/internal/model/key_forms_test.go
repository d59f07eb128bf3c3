package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// Keys a user may configure for a gateway or a local server (session
// api_key): a base64 token, which holds '/', '+' and '=', and a
// passphrase holding characters that JSON encoders escape.
const (
	base64Key     = "gwk_AbC/dEf+GhI/jKl9=="
	passphraseKey = `local&key<1>"x"`
)

// openKey starts a fake for d and opens its client with key.
func openKey(t *testing.T, d dialect, key string, limits Limits) (*fake, Client) {
	t.Helper()
	f := newFake(t)
	p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1/", Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// phpJSON is the JSON of v as encoders that escape '/' write it (PHP's
// json_encode, among others).
func phpJSON(v any) string { return strings.ReplaceAll(mustJSON(v), "/", `\/`) }

// dotnetJSON is the JSON of v as encoders that escape '+' write it (.NET's
// System.Text.Json by default), with upper-case hex digits.
func dotnetJSON(v any) string { return strings.ReplaceAll(mustJSON(v), "+", `\u002B`) }

// lowerPercent is the URL encoding of s with lower-case hex digits.
func lowerPercent(s string) string {
	return strings.NewReplacer("%2F", "%2f", "%2B", "%2b", "%3D", "%3d").Replace(url.QueryEscape(s))
}

// leaks reports the first of the forms of key found in s.
func leaks(s string, forms ...string) (string, bool) {
	for _, f := range forms {
		if strings.Contains(s, f) {
			return f, true
		}
	}
	return "", false
}

// TestEchoedKeyInEscapedForms: a gateway or a local server that echoes
// the key JSON-escaped (in a body Brain shows as text: one with no
// "error" object, one cut by the error bound, or a provider's body
// relayed inside an error message) or URL-encoded (in a redirect's
// Location) does not put it in the error in any of those forms.
func TestEchoedKeyInEscapedForms(t *testing.T) {
	b64JSON := `gwk_AbC\/dEf+GhI\/jKl9==`
	b64URL := url.QueryEscape(base64Key)
	phraseJSON := strings.Trim(mustJSON(passphraseKey), `"`)
	b64DotNet := `gwk_AbC/dEf\u002BGhI/jKl9==`
	forms := []string{base64Key, b64JSON, b64DotNet, b64URL, lowerPercent(base64Key), passphraseKey, phraseJSON}
	type reply struct {
		name  string
		key   string
		limit int64
		write func(w http.ResponseWriter, r *recorded)
		keep  string // what the message must still say
	}
	var other *httptest.Server
	replies := func(d dialect) []reply {
		return []reply{
			{name: "detail-php", key: base64Key, write: status(http.StatusUnauthorized,
				phpJSON(map[string]any{"detail": "Invalid API key: " + base64Key})), keep: "Invalid API key"},
			{name: "detail-go", key: passphraseKey, write: status(http.StatusUnauthorized,
				mustJSON(map[string]any{"detail": "Invalid API key: " + passphraseKey})), keep: "Invalid API key"},
			{name: "detail-dotnet", key: base64Key, write: status(http.StatusUnauthorized,
				dotnetJSON(map[string]any{"detail": "Invalid API key: " + base64Key})), keep: "Invalid API key"},
			{name: "cut", key: base64Key, limit: int64(len(`{"error":{"message":"Invalid API key: `) + len(b64JSON) + 4),
				write: status(http.StatusUnauthorized, phpJSON(map[string]any{"error": map[string]any{
					"message": "Invalid API key: " + base64Key + strings.Repeat(".", 64), "type": "invalid_request_error"}})),
				keep: "Invalid API key"},
			{name: "cut-inside", key: base64Key, limit: int64(len(`{"error":{"message":"Invalid API key: `) + 10),
				write: status(http.StatusUnauthorized, phpJSON(map[string]any{"error": map[string]any{
					"message": "Invalid API key: " + base64Key, "type": "invalid_request_error"}})),
				keep: "Invalid API key"},
			{name: "relayed", key: base64Key, write: status(http.StatusBadGateway, d.errorBody("upstream_error",
				"upstream answered: "+phpJSON(map[string]any{"error": "bad key " + base64Key}))), keep: "upstream answered"},
			{name: "relayed-stream", key: passphraseKey, write: sse(d.streamError("upstream_error",
				"upstream answered: "+mustJSON(map[string]any{"error": "bad key " + passphraseKey}))), keep: "upstream answered"},
			{name: "redirect", key: base64Key, write: func(w http.ResponseWriter, r *recorded) {
				http.Redirect(w, &http.Request{Method: r.Method}, other.URL+"/login?api_key="+url.QueryEscape(base64Key), http.StatusTemporaryRedirect)
			}, keep: "/login?api_key="},
			{name: "redirect-lower-hex", key: base64Key, write: func(w http.ResponseWriter, r *recorded) {
				http.Redirect(w, &http.Request{Method: r.Method}, other.URL+"/login?api_key="+lowerPercent(base64Key), http.StatusTemporaryRedirect)
			}, keep: "/login?api_key="},
		}
	}
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	for _, d := range dialects {
		for _, rp := range replies(d) {
			t.Run(d.provider+"/"+rp.name, func(t *testing.T) {
				f, c := openKey(t, d, rp.key, Limits{MaxErrorBytes: rp.limit})
				f.set(rp.write)
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("Call = %v, want a provider error", err)
				}
				if form, ok := leaks(err.Error(), forms...); ok {
					t.Fatalf("the error carries the key as %q: %v", form, err)
				}
				if rp.name == "cut-inside" {
					if form, ok := leaks(err.Error(), b64JSON[:10]); ok {
						t.Fatalf("the error carries the start of the key as %q: %v", form, err)
					}
				}
				if !strings.Contains(pe.Message, rp.keep) || !strings.Contains(pe.Message, "[redacted]") {
					t.Fatalf("message %q does not say %q with the key redacted", pe.Message, rp.keep)
				}
			})
		}
	}
}
