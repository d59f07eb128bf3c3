package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestWrongTypeNamesJSONKinds: a member of the wrong JSON type answers
// 422 naming the member and the JSON type it must have, in the API's
// terms, not the server's Go types.
func TestWrongTypeNamesJSONKinds(t *testing.T) {
	f := newFixture(t, Options{})
	sp := "/v1/sessions/" + f.create("c").SessionID
	for i, c := range []struct{ path, body, want string }{
		{"/v1/sessions", `[]`, "the request body must be an object"},
		{"/v1/sessions", `"x"`, "the request body must be an object"},
		{"/v1/sessions", `{"model":"m"}`, `field "model" must be an object`},
		{"/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"idle_ttl_ms":1.5}`, `field "idle_ttl_ms" must be an integer`},
		{"/v1/sessions", `{"model":{"provider":"scripted","name":"m"},"tools":{}}`, `field "tools" must be an array`},
		{"/v1/sessions", `{"model":{"provider":"scripted","name":7}}`, `field "model.name" must be a string`},
		{sp + "/messages", `{"input":"hi"}`, `field "input" must be an object`},
		{sp + "/messages", `{"input":{"message":"hi","media":[{"type":"image","url":true}]}}`, `must be a string`},
	} {
		st, _, b := f.do("POST", c.path, c.body, "Idempotency-Key", "w"+string(rune('a'+i)))
		var e api.ApiError
		_ = json.Unmarshal(b, &e)
		if st != 422 || e.Code != api.CodeInvalidRequest || !strings.Contains(e.Message, c.want) {
			t.Errorf("POST %s %s = %d %s, want 422 saying %q", c.path, c.body, st, b, c.want)
		}
	}
}
