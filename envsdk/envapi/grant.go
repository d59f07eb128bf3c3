package envapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
)

// Grant is a service grant: POST {"method", "input"} to URL with
// "Authorization: Bearer <Token>". Only the listed methods are granted.
// The same shape carries an execution callback, an operation's controller
// context and a binding's reporter.
//
// The token is a credential: a Grant, its value as well as a pointer to
// it (nil included), printed (%v, %+v, %#v, %s) or logged with log/slog
// (its text and JSON handlers) shows its URL and methods, never its
// token. The wire encoding keeps the token: it is the encoding of a
// *Grant (json.Marshal(&g), or a *Grant field, as Command, Operation and
// Request hold their grants), or of a Grant within a value encoded
// through a pointer. A Grant value encoded on its own, or within a value
// that is not (a struct passed by value, a map's element), encodes as its
// redacted text (MarshalText): a JSON string Brain refuses as a grant,
// not a token given away. Decoding is unaffected.
type Grant struct {
	URL     string   `json:"url" validate:"required,http_url,max=2048"`
	Token   string   `json:"token" validate:"required,max=256"`
	Methods []string `json:"methods" validate:"dive,identifier"`
}

// String shows the grant's URL and methods; the token is left out.
func (g Grant) String() string {
	return fmt.Sprintf("{url: %s, token: [redacted], methods: %v}", g.URL, g.Methods)
}

// GoString is String for %#v.
func (g Grant) GoString() string { return "envapi.Grant" + g.String() }

// MarshalText is String. log/slog's handlers, and encoding/json for a
// Grant value it cannot take the address of, encode a Grant value by it.
func (g Grant) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// LogValue logs the grant's URL and methods, without its token; a nil
// grant logs as null.
func (g *Grant) LogValue() slog.Value {
	if g == nil {
		return slog.AnyValue(nil)
	}
	return slog.GroupValue(slog.String("url", g.URL), slog.String("token", "[redacted]"), slog.Any("methods", g.Methods))
}

// wireGrant is a Grant's wire encoding, token included.
type wireGrant struct {
	URL     string   `json:"url"`
	Token   string   `json:"token"`
	Methods []string `json:"methods"`
}

// MarshalJSON writes the grant as it goes on the wire, token included
// (Methods as null when nil, as a struct without this method would).
func (g *Grant) MarshalJSON() ([]byte, error) {
	if g == nil {
		return []byte("null"), nil
	}
	return json.Marshal(wireGrant{URL: g.URL, Token: g.Token, Methods: g.Methods})
}

// Allows reports whether the grant lists method.
func (g *Grant) Allows(method string) bool {
	if g == nil {
		return false
	}
	for _, m := range g.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// Callback method names.
const (
	MethodEmit          = "emit"
	MethodResult        = "result"
	MethodReturned      = "returned"
	MethodFinish        = "finish"
	MethodModel         = "model"
	MethodEnvironments  = "environments"
	MethodTelemetry     = "telemetry"
	MethodEvents        = "events"
	MethodDispatch      = "dispatch"
	MethodSetTranscript = "set_transcript"
	MethodKVRead        = "kv_read"
	MethodKVPut         = "kv_put"
	MethodKVDelete      = "kv_delete"
)

// ToolMethods are the methods Brain grants a Tool execution.
func ToolMethods() []string {
	return []string{MethodEmit, MethodResult, MethodReturned, MethodFinish, MethodModel, MethodEnvironments, MethodTelemetry}
}

// AgentloopMethods are the methods Brain grants an Agentloop execution.
func AgentloopMethods() []string {
	return []string{MethodEmit, MethodTelemetry, MethodEvents, MethodModel, MethodDispatch, MethodEnvironments, MethodSetTranscript, MethodKVRead, MethodKVPut, MethodKVDelete}
}

// RecordingMethods are the methods that record something and answer its
// committed sequence: a request of one sent again under the same
// idempotency key is answered with the first's sequence.
func RecordingMethods() []string {
	return []string{MethodEmit, MethodResult, MethodReturned, MethodFinish, MethodSetTranscript, MethodKVPut, MethodKVDelete}
}

// ContextMethods are the methods of an operation's controller context.
func ContextMethods() []string {
	return []string{MethodEnvironments, MethodEmit, MethodResult}
}

// ExecutionCall is the body POSTed to a callback grant.
type ExecutionCall struct {
	Method string          `json:"method" validate:"identifier"`
	Input  json.RawMessage `json:"input"`
}
