package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// envRouteDecoders are the decoders of the environment routes' bodies,
// as the routes apply them after checkEnvBody.
var envRouteDecoders = []func([]byte) (any, error){
	func(b []byte) (any, error) { // executions/{sequence}/call
		var c envapi.ExecutionCall
		err := envapi.Strict(b, &c)
		return c, err
	},
	func(b []byte) (any, error) { return envapi.DecodeReporterEvent(b) },  // reporter
	func(b []byte) (any, error) { return envapi.DecodeControlRequest(b) }, // environments
	func(b []byte) (any, error) { // environments/{env}/calls/{name}
		var in struct {
			Input json.RawMessage `json:"input"`
		}
		err := envapi.Strict(b, &in)
		return in, err
	},
}

// maxRefusalMessage bounds the message of a refused environment body:
// it quotes what the body holds clipped.
const maxRefusalMessage = 1024

// FuzzDecodeEnvironmentBodies feeds any bytes to the body checks and
// decoders of the environment routes: a body that is not UTF-8, not JSON
// or gives a member twice is a 400 invalid_request, one whose fields do
// not decode a 422 invalid_request, never a panic; a refusal's message
// stays short whatever the body holds; a body taken encodes to one the
// route takes again.
func FuzzDecodeEnvironmentBodies(f *testing.F) {
	long := strings.Repeat("k", 1<<16)
	for _, s := range []string{
		`{"method":"emit","input":{"event_type":"progress","data":{"n":1}}}`,
		`{"type":"event","event_type":"progress","data":{"a":1}}`,
		`{"operation":"list"}`,
		`{"operation":"call","environment":{"name":"e","sequence":1},"method":"m","input":{}}`,
		`{"input":{"q":[1,2,3]}}`,
		`{"input":1,"input":2}`, `{"method":"` + "\xff" + `"}`, `{"` + long + `":1}`,
		`{"method":"` + long + `"}`, `{"type":"` + long + `"}`, `{"operation":"` + long + `"}`, `[]`, `null`, `{`,
	} {
		for i := range envRouteDecoders {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		decode := envRouteDecoders[int(which)%len(envRouteDecoders)]
		refusal := func(err error, status int) {
			t.Helper()
			var he *Error
			if !errors.As(err, &he) || he.Status != status || he.Body.Code != api.CodeInvalidRequest {
				t.Fatalf("refusal %v is not a %d invalid_request", err, status)
			}
			if n := len(he.Body.Message); n > maxRefusalMessage {
				t.Fatalf("a refusal message of %d bytes: %.200s...", n, he.Body.Message)
			}
		}
		if err := checkEnvBody(b); err != nil {
			refusal(err, http.StatusBadRequest)
			return
		}
		v, err := decode(b)
		if err != nil {
			refusal(invalidField(cleanMessage(err.Error())), http.StatusUnprocessableEntity)
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encode %+v: %v", v, err)
		}
		if err := checkEnvBody(again); err != nil {
			t.Fatalf("%s encodes to %s, refused: %v", b, again, err)
		}
		if _, err := decode(again); err != nil {
			t.Fatalf("%s encodes to %s, refused: %v", b, again, err)
		}
	})
}
