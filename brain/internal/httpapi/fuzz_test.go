package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"unicode/utf8"

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

// decodeStrictTwoPass is the earlier decodeStrict: UTF-8 and validity checks, then
// a decode, then the same rule for member names (exactMembers). The
// one-pass decodeStrict must classify every body the same.
func decodeStrictTwoPass(b []byte, v any) error {
	if !utf8.Valid(b) || !json.Valid(b) {
		return badRequest("request body is not valid JSON")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return invalidField(err.Error())
	}
	return exactMembers(b, v)
}

func FuzzDecodeStrictOnePass(f *testing.F) {
	for _, s := range []string{`{"input":{"message":"hi"}}`, `{} {}`, `{"input":{"message":1}}`, ` {"x":1} `, `{"input":{"message":"a"}} x`, ``, `1`, `{"input":`} {
		f.Add([]byte(s))
	}
	status := func(err error) int {
		var he *Error
		if errors.As(err, &he) {
			return he.Status
		}
		return 0
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m1, m2 api.MessageRequest
		e1, e2 := decodeStrict(b, &m1), decodeStrictTwoPass(b, &m2)
		if status(e1) != status(e2) {
			t.Fatalf("%q: one pass %v, two passes %v", b, e1, e2)
		}
		if e1 == nil && !reflect.DeepEqual(m1, m2) {
			t.Fatalf("%q decodes differently", b)
		}
	})
}

// FuzzDecodeHostBodies feeds arbitrary bytes to the decoders of the host
// routes: every refusal is a 400/422 invalid_request, never a panic.
func FuzzDecodeHostBodies(f *testing.F) {
	for _, s := range []string{
		`{"session_id":"ses_x","sequence":3,"update":{"type":"finish","outcome":{"status":"ok","value":1}}}`,
		`{"session_id":"ses_x","sequence":3,"event_type":"e","data":{}}`,
		`{"session_id":"ses_x","sequence":3,"request":{"messages":[]}}`,
		`{"session_id":"ses_x","sequence":3,"call":{"method":"emit","input":null}}`,
		`{"connection":"hconn_x"}`, `{`, `[]`, `{"update":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []any{&api.HostResult{}, &api.HostEvent{}, &api.HostModelCall{}, &api.HostServiceCall{}, &api.HostSuspend{}} {
			err := decodeStrict(b, v)
			var he *Error
			if err != nil && (!errors.As(err, &he) || (he.Status != http.StatusBadRequest && he.Status != http.StatusUnprocessableEntity)) {
				t.Fatalf("%T refusal %v is not a 400/422", v, err)
			}
		}
	})
}
