package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestFieldNamesAreCaseSensitive checks that a member whose name differs
// from a field's only in case is an unknown field (422), not that field:
// a case-sensitive reader of the same body would see another request.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	f := newFixture(t, Options{})
	sp := "/v1/sessions/" + f.create("c").SessionID
	cases := []struct{ name, path, body string }{
		{"create/top", "/v1/sessions", `{"MODEL":{"provider":"scripted","name":"m"}}`},
		{"create/shadowing", "/v1/sessions", `{"model":{"provider":"scripted","name":"a"},"Model":{"provider":"scripted","name":"b"}}`},
		{"create/nested", "/v1/sessions", `{"model":{"provider":"scripted","Name":"m"}}`},
		{"message", sp + "/messages", `{"input":{"Message":"hi"}}`},
		{"message/in-array", sp + "/messages", `{"input":{"message":"m","media":[{"type":"image","URL":"https://example.com/a.png"}]}}`},
	}
	for _, c := range cases {
		st, _, b := f.do("POST", c.path, c.body, "Idempotency-Key", c.name)
		var e api.ApiError
		if st != 422 || json.Unmarshal(b, &e) != nil || e.Code != api.CodeInvalidRequest {
			t.Errorf("%s: %s = %d %s, want 422 invalid_request", c.name, c.body, st, b)
		}
	}
	// Free-form members (configuration, schemas, inputs) keep any names.
	body := `{"model":{"provider":"scripted","name":"m"},"agentloop":{"implementation":{"type":"brain_builtin","name":"default"},"configuration":{"Name":1,"name":2}}}`
	if st, _, b := f.do("POST", "/v1/sessions", body, "Idempotency-Key", "free"); st != 200 {
		t.Errorf("create with free-form names = %d %s", st, b)
	}
}
