package agentloop

import (
	"context"
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
)

// Services is the service table an activation may call. In Wasm a call
// whose ctx has ended is refused without reaching the host, with an error
// wrapping ctx's; a call made runs in the host until it answers.
type Services interface {
	// Model calls the session's model. A nil System, Tools or
	// ResponseFormat takes the session's; an empty, non-nil Tools offers
	// no tools.
	Model(ctx context.Context, req api.ModelRequest) (api.ModelResult, error)
	// Dispatch runs tool invocations in parallel and answers in call order.
	Dispatch(ctx context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error)
	// Emit commits an extension event and answers its sequence.
	Emit(ctx context.Context, eventType string, data json.RawMessage) (uint64, error)
	// Telemetry records a best-effort diagnostic; it is never journalled.
	Telemetry(ctx context.Context, record json.RawMessage) error
	// Events reads a page of public events after a cursor.
	Events(ctx context.Context, after uint64) (api.EventPage, error)
	// SetTranscript saves the conversation and answers the committed
	// sequence.
	SetTranscript(ctx context.Context, messages []api.Message) (uint64, error)
	// KVRead answers the stored value and whether the key is present.
	// Keys are identifiers (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$); any
	// other key fails as invalid_request in all three KV methods.
	KVRead(ctx context.Context, key string) (json.RawMessage, bool, error)
	// KVPut stores a value and answers the committed sequence.
	KVPut(ctx context.Context, key string, value json.RawMessage) (uint64, error)
	// KVDelete removes a key and answers the committed sequence.
	KVDelete(ctx context.Context, key string) (uint64, error)
	// Environments runs an environment control request.
	Environments(ctx context.Context, req json.RawMessage) (json.RawMessage, error)
}

// Func is the shape of a natively run agentloop.
type Func func(ctx context.Context, svc Services, in api.TurnInput) (api.TurnOutput, error)
