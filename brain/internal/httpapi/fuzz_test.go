package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// FuzzDecodeRequests feeds arbitrary bodies to the create and message
// decoders: they never panic and refuse with 400 (not JSON) or 422 (JSON
// with invalid fields) only.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":{"provider":"scripted","name":"m"}}`,
		`{"model":{"provider":"p","name":"n","api_key":"k"},"agentloop":{"implementation":{"type":"brain_builtin","name":"default"}},"tools":[],"environments":[{"name":"e","driver":"http","url":"https://x"}]}`,
		`{"input":{"message":"hi","media":[{"type":"file","media_type":"application/pdf","url":"https://x/y"}]}}`,
		`{"transcript":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","is_error":false}]}]}`,
		`{`, `null`, `[]`, `{"input":"x"}`,
	} {
		f.Add([]byte(s))
	}
	check := func(t *testing.T, err error) {
		if err == nil {
			return
		}
		var he *Error
		if !errors.As(err, &he) || (he.Status != http.StatusBadRequest && he.Status != http.StatusUnprocessableEntity) || he.Body.Code != api.CodeInvalidRequest {
			t.Fatalf("refusal %v is not a 400/422 invalid_request", err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c api.CreateSessionRequest
		err := decodeStrict(b, &c)
		if err == nil {
			err = validateCreate(&c)
		}
		check(t, err)
		var m api.MessageRequest
		err = decodeStrict(b, &m)
		if err == nil {
			err = validateInput(m.Input)
		}
		check(t, err)
	})
}
