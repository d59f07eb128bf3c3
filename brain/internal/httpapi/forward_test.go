package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
)

// TestForwardAfterAuthentication: a write to a session another node owns
// is authenticated by the node that receives it before anything is
// forwarded. Without the server token, with a wrong one, with a forged
// invocation or reporter token, it is refused there with 401 unauthorized
// and the owner never hears of it; an authenticated write reaches the
// owner, marked as forwarded, and its answer is relayed.
func TestForwardAfterAuthentication(t *testing.T) {
	var reached atomic.Int32
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get(forwardedHeader) != "1" {
			t.Errorf("forwarded request without %s", forwardedHeader)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(`{"from":"owner"}`))
	}))
	defer owner.Close()
	b, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var routed atomic.Bool
	f := newFixture(t, Options{Bindings: b,
		Route: func(context.Context, string) (string, error) {
			if routed.Load() {
				return owner.URL, nil
			}
			return "", nil
		},
		LeaseEpoch: func(context.Context, string) (int64, error) { return 3, nil },
	})
	id := f.create("c").SessionID
	routed.Store(true)
	forged := "Bearer " + "AAAAAAAAAAMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	msg := `{"input":{"message":"hi"}}`
	for _, c := range []struct {
		name, method, path, body, auth string
	}{
		{"no token", "POST", "/v1/sessions/" + id + "/messages", msg, ""},
		{"wrong token", "POST", "/v1/sessions/" + id + "/messages", msg, "Bearer wrong"},
		{"not bearer", "POST", "/v1/sessions/" + id + "/messages", msg, testToken},
		{"delete, wrong token", "DELETE", "/v1/sessions/" + id, "", "Bearer wrong"},
		{"cancel, no token", "POST", "/v1/sessions/" + id + "/cancel", "{}", ""},
		{"end, wrong token", "POST", "/v1/sessions/" + id + "/end", "{}", "Bearer wrong"},
		{"control, wrong token", "POST", "/v1/sessions/" + id + "/environments", `{}`, "Bearer wrong"},
		{"environment call, wrong token", "POST", "/v1/sessions/" + id + "/environments/box/calls/m", `{"input":1}`, "Bearer wrong"},
		{"execution call, server token", "POST", "/v1/sessions/" + id + "/executions/5/call", `{"method":"emit","input":{}}`, "Bearer " + testToken},
		{"execution call, forged token", "POST", "/v1/sessions/" + id + "/executions/5/call", `{"method":"emit","input":{}}`, forged},
		{"reporter, server token", "POST", "/v1/sessions/" + id + "/environments/box/1/events", `{"type":"event","event_type":"x","data":{}}`, "Bearer " + testToken},
		{"reporter, no token", "POST", "/v1/sessions/" + id + "/environments/box/1/events", `{"type":"event","event_type":"x","data":{}}`, ""},
	} {
		st, _, body := f.do(c.method, c.path, c.body, "Authorization", c.auth, "Idempotency-Key", "k-"+c.name)
		var e api.ApiError
		json.Unmarshal(body, &e)
		if st != http.StatusUnauthorized || e.Code != api.CodeUnauthorized {
			t.Errorf("%s: %d %s, want 401 unauthorized", c.name, st, body)
		}
		if n := reached.Load(); n != 0 {
			t.Fatalf("%s: the owner got %d requests; an unauthenticated write was forwarded", c.name, n)
		}
	}
	st, _, body := f.do("POST", "/v1/sessions/"+id+"/messages", msg, "Idempotency-Key", "k-ok")
	if st != http.StatusAccepted || string(body) != `{"from":"owner"}` || reached.Load() != 1 {
		t.Fatalf("authenticated write = %d %s (owner reached %d times), want the owner's answer", st, body, reached.Load())
	}
}
