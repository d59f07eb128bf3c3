package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestOpenAPIDocumentsServiceCallRefusals: a Tool's execution calls a
// method its grant does not list (kv_put belongs to agentloops), and the
// server answers 403 not_granted, as the execution call route's
// documented answers say.
func TestOpenAPIDocumentsServiceCallRefusals(t *testing.T) {
	v := openAPIValidator(t)
	binder := newBinder(t)
	t.Cleanup(func() { binder.Close() })
	f := newEngineFixture(t, Options{Bindings: binder}, session.Config{Environments: binder}, 0)

	// The environment answers every operation at once; an execute first
	// calls kv_put through its callback and keeps what Brain answered.
	type answer struct {
		status int
		body   []byte
		resp   *http.Response
		path   string
	}
	got := make(chan answer, 1)
	env := toolEnvironment(t, func(g *envapi.Grant) string {
		u, _ := url.Parse(g.URL)
		creq, _ := http.NewRequest("POST", f.url+u.Path, strings.NewReader(`{"method":"kv_put","input":{"key":"a","value":1}}`))
		creq.Header.Set("Authorization", "Bearer "+g.Token)
		creq.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(creq); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			select {
			case got <- answer{resp.StatusCode, b, resp, u.Path}:
			default:
			}
		}
		return `{"type":"result","output":{}}`
	})
	f.callTool(env.URL)
	var a answer
	select {
	case a = <-got:
	default:
		t.Fatal("the environment received no execute with a callback")
	}
	if a.status != http.StatusForbidden || !strings.Contains(string(a.body), `"not_granted"`) {
		t.Fatalf("kv_put from a Tool = %d %s, want 403 not_granted", a.status, a.body)
	}
	vreq, _ := http.NewRequest("POST", f.url+a.path, nil)
	if err := v.Check(vreq, a.resp); err != nil {
		t.Error(err)
	}
}

func jsonUint(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
