package envbind

import (
	"regexp"
	"strings"
	"testing"
)

// apiKeyValue finds the api_key values a routes file spells out.
var apiKeyValue = regexp.MustCompile(`"api_key"\s*:\s*"([^"\\]{6,})"`)

// FuzzParseRoutes: a routes file parses to routes or an error, never a
// panic, and an error never quotes an api_key the file holds.
func FuzzParseRoutes(f *testing.F) {
	f.Add([]byte(`{"docker": {"endpoint": "http://127.0.0.1:9000", "api_key": "sk-route-secret"}}`))
	f.Add([]byte(`{"docker": {"endpoint": "http://127.0.0.1:9000", "api_key": "sk-route-secret", "api_kex": 1}}`))
	f.Add([]byte(`{"docker": {"endpoint": "http://127.0.0.1:9000", "api_key": "sk-route-secret"}} {}`))
	f.Add([]byte(`{"docker": {"endpoint": 7, "api_key": "sk-route-secret"}}`))
	f.Add([]byte(`{"docker": {"api_key": ["sk-route-secret"]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		routes, err := parseRoutes(b)
		if err == nil {
			if routes == nil {
				t.Fatal("parsed no routes object without an error")
			}
			return
		}
		for _, m := range apiKeyValue.FindAllSubmatch(b, -1) {
			if strings.Contains(err.Error(), string(m[1])) {
				t.Fatalf("the error %q quotes the api_key %q", err, m[1])
			}
		}
	})
}

// A routes file followed by more than white space, or null, is refused.
func TestParseRoutesIsStrict(t *testing.T) {
	const ok = `{"docker": {"endpoint": "http://127.0.0.1:9000"}}`
	if r, err := parseRoutes([]byte(ok + "\n")); err != nil || r["docker"].Endpoint != "http://127.0.0.1:9000" {
		t.Fatalf("parse = %+v %v", r, err)
	}
	for _, bad := range []string{ok + `{}`, ok + `}`, ok + "\n]", `null`, `[]`, `{"d": {"endpoint": "x", "token": "y"}}`} {
		if _, err := parseRoutes([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// An unknown field name that holds an api_key of the file (a key typed
// where a name goes) is refused without quoting the key, whatever the
// case the file spells "api_key" in; the message still names the field.
func TestParseRoutesRedactsKeysFromNames(t *testing.T) {
	for _, file := range []string{
		`{"docker": {"endpoint": "http://127.0.0.1:9000", "api_key": "sk-route-secret", "sk-route-secret": 1}}`,
		`{"docker": {"API_KEY": "sk-route-secret", "x-sk-route-secret-y": 1}}`,
		`{"docker": {"sk-route-secret": 1, "api_key": "sk-route-secret"}}`,
	} {
		_, err := parseRoutes([]byte(file))
		if err == nil || strings.Contains(err.Error(), "sk-route-secret") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%s: error %v, want the field named with its key redacted", file, err)
		}
	}
}
