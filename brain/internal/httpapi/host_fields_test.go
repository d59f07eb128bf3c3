package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestHostRequestFieldsAreChecked: a host request whose session_id does
// not have the session id shape, whose sequence is not a tool call's (0),
// a service call that names no method, or a suspend that names no
// connection, breaks the request schema: it is
// answered 422 invalid_request naming the field, not 403 as a well-formed
// request of a call the host does not hold, nor 200 as a suspend that
// found nothing to close; nothing is recorded.
func TestHostRequestFieldsAreChecked(t *testing.T) {
	f := newHostFixture(t)
	cmd := f.invoke()
	auth := []string{"Authorization", "Bearer " + f.token}
	hp := "/v1/hosts/" + f.hostID
	good := `"session_id":"` + cmd.SessionID + `","sequence":` + jsonNumber(cmd.Sequence)
	before := f.kinds(cmd.SessionID)
	for _, bad := range []string{
		`"session_id":"not-a-session","sequence":` + jsonNumber(cmd.Sequence),
		`"session_id":"","sequence":` + jsonNumber(cmd.Sequence),
		`"session_id":"` + cmd.SessionID + `","sequence":0`,
		`"sequence":` + jsonNumber(cmd.Sequence),
		`"session_id":"` + cmd.SessionID + `"`,
	} {
		for _, c := range []struct{ path, rest string }{
			{"/results", `"update":{"type":"result","outcome":{"status":"ok"}}`},
			{"/events", `"event_type":"host.note","data":{}`},
			{"/model", `"request":{"messages":[]}`},
			{"/call", `"call":{"method":"emit","input":{"event_type":"host.note","data":{}}}`},
		} {
			st, _, b := f.do("POST", hp+c.path, `{`+bad+`,`+c.rest+`}`, auth...)
			var e api.ApiError
			_ = json.Unmarshal(b, &e)
			if st != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest {
				t.Errorf("%s with {%s} = %d %s, want 422 invalid_request", c.path, bad, st, b)
			}
		}
	}
	// A service call names its method.
	for _, call := range []string{`"call":{"input":{}}`, `"call":{"method":"","input":{}}`, `"call":null`} {
		st, _, b := f.do("POST", hp+"/call", `{`+good+`,`+call+`}`, auth...)
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != http.StatusUnprocessableEntity || e.Code != api.CodeInvalidRequest {
			t.Errorf("/call with {%s} = %d %s, want 422 invalid_request", call, st, b)
		}
	}
	st, _, b := f.do("POST", hp+"/suspend", `{}`, auth...)
	if st != http.StatusUnprocessableEntity {
		t.Errorf("suspend naming no connection = %d %s, want 422", st, b)
	}
	after := f.kinds(cmd.SessionID)
	for k, n := range after {
		if before[k] != n {
			t.Errorf("refused requests recorded %s: %d before, %d after", k, before[k], n)
		}
	}
	// The well-formed request of the same call is taken.
	if st, _, b := f.do("POST", hp+"/events", `{`+good+`,"event_type":"host.note","data":{}}`, auth...); st != http.StatusOK {
		t.Fatalf("a well-formed event = %d %s, want 200", st, b)
	}
}
