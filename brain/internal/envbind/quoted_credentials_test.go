package envbind

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A provider that writes the credential it was sent into a part of its
// answer that cannot be redacted (an identifier field such as a failure's
// code or a setup's on_turn_end, a value the decoder's error quotes with
// escapes, or one so long that the error cuts it) does not get Brain to
// journal the credential or any sizeable part of it. The answer is not
// trusted either: the operation's outcome is unknown.
func TestQuotedCredentialsNeverJournaled(t *testing.T) {
	for _, c := range []struct {
		name, credential string
		receipt          func(cred string) string
		// status, when set, is the HTTP status line answered instead
		// of a response.
		status func(cred string) string
		// code, when set, is the failure the setup keeps: a code that
		// merely holds a short credential as a word is not refused.
		code string
	}{
		{"failure code", "sess-cred.7f3a9c", func(cred string) string {
			return `{"type":"failure","code":"` + cred + `","message":"refused","retryable":false}`
		}, nil, ""},
		{"on_turn_end", "sess-cred.7f3a9c", func(cred string) string {
			return `{"type":"accepted","on_turn_end":"` + cred + `"}`
		}, nil, ""},
		{"receipt type with escapes", `pa"ss<w>rd-7f3a9c`, func(cred string) string {
			q, _ := json.Marshal(cred)
			return `{"type":` + string(q) + `}`
		}, nil, ""},
		{"value cut by the error", "Zq7pKsessioncred9b1d", func(cred string) string {
			return `{"type":"accepted","on_turn_end":"` + strings.Repeat("x", 240) + cred + `"}`
		}, nil, ""},
		{"status line with escapes", `pa"ss<w>rd-7f3a9c`, nil, func(cred string) string {
			return "HTTP/1.1 " + cred + " OK\r\n\r\n"
		}, ""},
		{"short credential as a word", "token", func(string) string {
			return `{"type":"failure","code":"invalid-token","message":"refused","retryable":false}`
		}, nil, "invalid-token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var cmd struct {
					Operation struct {
						Sequence uint64 `json:"sequence"`
					} `json:"operation"`
				}
				body, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(body, &cmd)
				cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
				if c.status != nil {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.WriteString(conn, c.status(cred))
					_ = conn.Close()
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"contract":"environment/v1","sequence":`+jsonUint(cmd.Operation.Sequence)+
					`,"receipt":`+c.receipt(cred)+`}`)
			}))
			defer srv.Close()
			engine, store := engineOn(t, testBinder(t, Config{}))
			sum, err := engine.Create(context.Background(), "", api.CreateSessionRequest{
				Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
				Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL, Credential: c.credential}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var f api.Failure
			for _, r := range readAll(t, store, sum.SessionID) {
				if r.Kind == api.KindEnvironmentSetupFailed {
					_ = json.Unmarshal(r.Data, &f)
				}
				if c.code != "" {
					continue
				}
				for _, s := range stringsOf(t, r.Data) {
					q := strconv.Quote(c.credential)
					for _, secret := range []string{c.credential, q[1 : len(q)-1], c.credential[:12]} {
						if strings.Contains(s, secret) {
							t.Errorf("%s record holds %q: %s", r.Kind, secret, s)
						}
					}
				}
			}
			switch {
			case c.code != "":
				if f.Code != c.code || f.Ambiguous {
					t.Errorf("setup failure %+v, want the provider's failure %s", f, c.code)
				}
			case sum.Status != api.StatusFailed || f.Code != api.FailureUnknown || !f.Ambiguous:
				t.Errorf("session %s, setup failure %+v; want the setup's outcome unknown", sum.Status, f)
			}
		})
	}
}
