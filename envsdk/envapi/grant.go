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
type Grant struct {
	URL     string   `json:"url" validate:"required,http_url,max=2048"`
	Token   string   `json:"token" validate:"required,max=256"`
	Methods []string `json:"methods" validate:"dive,identifier"`
}

// String shows the grant's URL and methods. The token is a credential and
// is left out, so a grant printed (%v, %+v, %s) or logged does not give it
// away; the wire encoding (JSON) keeps it.
func (g Grant) String() string {
	return fmt.Sprintf("{url: %s, token: [redacted], methods: %v}", g.URL, g.Methods)
}

// GoString is String for %#v.
func (g Grant) GoString() string { return "envapi.Grant" + g.String() }

// LogValue logs the grant's URL and methods, without its token, for
// log/slog handlers that would encode it as JSON.
func (g *Grant) LogValue() slog.Value {
	if g == nil {
		return slog.AnyValue(nil)
	}
	return slog.GroupValue(slog.String("url", g.URL), slog.String("token", "[redacted]"), slog.Any("methods", g.Methods))
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
