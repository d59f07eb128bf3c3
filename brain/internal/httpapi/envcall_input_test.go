package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestEnvironmentCallNeedsItsInput: the environment call route's body is
// {"input": ANY} with input required (JSON null is a value). A body
// without it is refused 422 and nothing is sent to the environment; with
// it, the call goes out once.
func TestEnvironmentCallNeedsItsInput(t *testing.T) {
	binder := newBinder(t)
	t.Cleanup(func() { binder.Close() })
	f := newEngineFixture(t, Options{Bindings: binder}, session.Config{Environments: binder}, 0)
	var calls atomic.Int32
	env := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cmd envapi.Command
		if err := json.NewDecoder(r.Body).Decode(&cmd); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		receipt := `{"type":"accepted"}`
		if cmd.Operation.Request.Type == envapi.RequestCall {
			calls.Add(1)
			receipt = `{"type":"result","output":{"ok":true}}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"contract":"environment/v1","sequence":`+jsonUint(cmd.Operation.Sequence)+`,"receipt":`+receipt+`}`)
	}))
	t.Cleanup(env.Close)
	create := `{"model":{"provider":"scripted","name":"m"},
		"environments":[{"name":"box","driver":"http","url":"` + env.URL + `","methods":{"inspect":{"description":"d","input_schema":{}}}}]}`
	st, _, b := f.do("POST", "/v1/sessions", create, "Idempotency-Key", "c")
	if st != 200 {
		t.Fatalf("create = %d %s", st, b)
	}
	var sum api.SessionSummary
	json.Unmarshal(b, &sum)
	path := "/v1/sessions/" + sum.SessionID + "/environments/box/calls/inspect"
	for i, body := range []string{`{}`, `null`} {
		st, _, b := f.do("POST", path, body, "Idempotency-Key", "k"+string(rune('a'+i)))
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest {
			t.Errorf("call with body %s = %d %s, want 422 invalid_request", body, st, b)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the environment received %d calls for bodies without input, want none", n)
	}
	if st, _, b := f.do("POST", path, `{"input":null}`, "Idempotency-Key", "kz"); st != 200 {
		t.Fatalf("call with input null = %d %s, want 200", st, b)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the environment received %d calls, want 1", n)
	}
}
