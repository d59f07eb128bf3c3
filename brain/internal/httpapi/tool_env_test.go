package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// toolEnvironment serves environment/v1 and answers each operation at
// once as accepted, except an execute that carries a callback grant:
// onExecute is given the grant and answers the receipt. The server ends
// with t.
func toolEnvironment(t *testing.T, onExecute func(g *envapi.Grant) (receipt string)) *httptest.Server {
	t.Helper()
	env := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cmd envapi.Command
		if err := json.NewDecoder(r.Body).Decode(&cmd); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		receipt := `{"type":"accepted"}`
		if g := cmd.Operation.Request.Callback; cmd.Operation.Request.Type == envapi.RequestExecute && g != nil {
			receipt = onExecute(g)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"contract":"environment/v1","sequence":`+jsonUint(cmd.Operation.Sequence)+`,"receipt":`+receipt+`}`)
	}))
	t.Cleanup(env.Close)
	return env
}

// callTool creates a session whose one Tool, t, is placed in the
// environment box served at envURL, and sends it a message whose turn
// calls t once. It answers the session's id.
func (f *fixture) callTool(envURL string) string {
	f.t.Helper()
	create := `{"model":{"provider":"scripted","name":"m"},
		"environments":[{"name":"box","driver":"http","url":"` + envURL + `"}],
		"tools":[{"name":"t","input_schema":{"type":"object"},"placements":{"box":{"implementation":{}}}}]}`
	st, _, b := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "c")
	if st != 200 {
		f.t.Fatalf("create = %d %s", st, b)
	}
	var sum struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(b, &sum)
	msg, _ := json.Marshal(map[string]any{"input": map[string]string{"message": `{"tool_calls":[{"name":"t","input":{}}],"reply":"done"}`}})
	if st, _, b := f.do("POST", "/v1/sessions/"+sum.SessionID+"/messages", string(msg), "Idempotency-Key", "m"); st != 200 {
		f.t.Fatalf("send = %d %s", st, b)
	}
	return sum.SessionID
}

// returnedTool runs a session whose one Tool's execute is answered
// returned (the Tool goes on in the background) by an environment over a
// Binder whose answers are bounded at maxResponse bytes (0: the
// default). It answers the fixture, the session's id and the Tool's
// callback grant.
func returnedTool(t *testing.T, maxResponse int64) (*fixture, string, *envapi.Grant) {
	t.Helper()
	binder, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1", MaxResponseBytes: maxResponse})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { binder.Close() })
	f := newEngineFixture(t, Options{Bindings: binder}, session.Config{Environments: binder}, 0)
	grants := make(chan *envapi.Grant, 1)
	env := toolEnvironment(t, func(g *envapi.Grant) string {
		select {
		case grants <- g:
		default:
		}
		return `{"type":"returned"}`
	})
	id := f.callTool(env.URL)
	select {
	case g := <-grants:
		return f, id, g
	default:
		t.Fatal("the environment received no execute with a callback")
		return nil, "", nil
	}
}
