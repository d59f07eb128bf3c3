package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestOpenAPIDocumentsServiceCallRefusals: a Tool's execution calls a
// method its grant does not list (kv_put belongs to agentloops), and the
// server answers 403 not_granted, as the execution call route's
// documented answers say.
func TestOpenAPIDocumentsServiceCallRefusals(t *testing.T) {
	v := openAPIValidator(t)
	binder, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
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
	env := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cmd envapi.Command
		if err := json.NewDecoder(r.Body).Decode(&cmd); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		receipt := `{"type":"accepted"}`
		if g := cmd.Operation.Request.Callback; cmd.Operation.Request.Type == envapi.RequestExecute && g != nil {
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
			receipt = `{"type":"result","output":{}}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"contract":"environment/v1","sequence":`+jsonUint(cmd.Operation.Sequence)+`,"receipt":`+receipt+`}`)
	}))
	t.Cleanup(env.Close)

	create := `{"model":{"provider":"scripted","name":"m"},
		"environments":[{"name":"box","driver":"http","url":"` + env.URL + `"}],
		"tools":[{"name":"t","input_schema":{"type":"object"},"placements":{"box":{"implementation":{}}}}]}`
	st, _, b := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "c")
	if st != 200 {
		t.Fatalf("create = %d %s", st, b)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(b, &sum)
	msg, _ := json.Marshal(map[string]any{"input": map[string]string{"message": `{"tool_calls":[{"name":"t","input":{}}],"reply":"done"}`}})
	if st, _, b := f.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", string(msg), "Idempotency-Key", "m"); st != 200 {
		t.Fatalf("send = %d %s", st, b)
	}
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
