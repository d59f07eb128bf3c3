package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/envbind"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestCreateRefusesABuiltinLoopConfigurationItWouldRefuse: a session of
// the built-in loop (named or by default) whose configuration that loop
// refuses on every turn (a negative max_steps, one that is not an
// integer, a configuration that is not an object) is refused at create
// with 422 invalid_request naming the field, and no session is created.
// Configurations the loop takes are accepted, and a custom loop's
// configuration stays its own: the same negative max_steps is accepted
// for a remote loop.
func TestCreateRefusesABuiltinLoopConfigurationItWouldRefuse(t *testing.T) {
	binder, err := envbind.New(envbind.Config{Key: bytes.Repeat([]byte{1}, 32), PublicURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { binder.Close() })
	f := newEngineFixture(t, Options{Bindings: binder}, session.Config{Environments: binder}, 0)
	env := toolEnvironment(t, func(*envapi.Grant) string { return `{"type":"accepted"}` })

	n := 0
	create := func(agentloop string) (int, []byte) {
		t.Helper()
		n++
		body := `{"model":{"provider":"scripted","name":"m"},
			"environments":[{"name":"box","driver":"http","url":"` + env.URL + `"}],
			"agentloop":` + agentloop + `}`
		st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", "c"+jsonNumber(uint64(n)))
		return st, b
	}
	sessions := func() int {
		t.Helper()
		st, _, b := f.do("GET", "/v1/sessions", "")
		var list api.SessionList
		if st != 200 || json.Unmarshal(b, &list) != nil {
			t.Fatalf("list = %d %s", st, b)
		}
		return len(list.Sessions)
	}
	builtin := `"implementation":{"type":"brain_builtin","name":"default"},`
	for _, tc := range []struct{ agentloop, field string }{
		{`{"configuration":{"max_steps":-1}}`, "max_steps"},
		{`{` + builtin + `"configuration":{"max_steps":-64}}`, "max_steps"},
		{`{"configuration":{"max_steps":"many"}}`, "max_steps"},
		{`{"configuration":{"max_steps":2.5}}`, "max_steps"},
		{`{"configuration":[1]}`, "agentloop.configuration"},
		{`{` + builtin + `"configuration":"x"}`, "agentloop.configuration"},
	} {
		st, b := create(tc.agentloop)
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, tc.field) {
			t.Errorf("create with agentloop %s = %d %s, want 422 invalid_request naming %s", tc.agentloop, st, b, tc.field)
		}
	}
	if got := sessions(); got != 0 {
		t.Fatalf("%d sessions after the refused creates, want none", got)
	}
	for _, agentloop := range []string{
		`{"configuration":{"max_steps":0}}`,
		`{"configuration":{"max_steps":3,"other":true}}`,
		`{` + builtin + `"configuration":null}`,
		`{"implementation":{"kind":"remote"},"environment":"box","configuration":{"max_steps":-1}}`,
	} {
		if st, b := create(agentloop); st != http.StatusOK {
			t.Errorf("create with agentloop %s = %d %s, want 200", agentloop, st, b)
		}
	}
}
