package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
)

// Names of the Wasm Tool ABI.
const (
	// HostModule is the import module of every service function.
	HostModule = "brain"
	// HostAnswer copies the pending answer of the last service call into
	// guest memory: answer(ptr i32, len i32) -> i32 (bytes copied).
	HostAnswer = "answer"
	// ExportRun runs one invocation: run(ptr i32, len i32) -> i64.
	ExportRun = "run"
	// ExportAlloc allocates guest memory for the invocation:
	// brain_alloc(size i32) -> i32.
	ExportAlloc = "brain_alloc"
)

// Invocation is what one run receives.
type Invocation struct {
	// Input is the tool input, valid against the tool's input_schema.
	Input json.RawMessage `json:"input"`
	// Configuration is the environment's current configuration (null
	// when none is declared).
	Configuration json.RawMessage `json:"configuration"`
	// DeadlineAtMs is the absolute deadline in Unix milliseconds; 0 means
	// unlimited. The host closes the instance when it passes.
	DeadlineAtMs int64 `json:"deadline_at_ms"`
}

// Services is the service table a Tool may call. In Wasm a call whose ctx
// has ended is refused without reaching the host, with an error wrapping
// ctx's; a call made runs in the host until it answers (the invocation's
// deadline bounds it).
type Services interface {
	// Emit commits an extension event and answers its sequence.
	Emit(ctx context.Context, eventType string, data json.RawMessage) (uint64, error)
	// Result commits an intermediate result (tool_result_emitted).
	Result(ctx context.Context, outcome api.Outcome) (uint64, error)
	// Returned ends the synchronous phase; the tool stays open until it
	// finishes. A nil outcome returns without one.
	Returned(ctx context.Context, outcome *api.Outcome) (uint64, error)
	// Finish closes the tool; later emissions are refused. A nil outcome
	// finishes with the last result, or ok null.
	Finish(ctx context.Context, outcome *api.Outcome) (uint64, error)
	// Model calls the session's model with explicit messages.
	Model(ctx context.Context, req api.ModelRequest) (api.ModelResult, error)
	// Environments runs an environment control request, bounded by the
	// tool's grants.
	Environments(ctx context.Context, req json.RawMessage) (json.RawMessage, error)
	// Telemetry records a best-effort diagnostic; it is never journalled.
	Telemetry(ctx context.Context, record json.RawMessage) error
}

// Func is a Tool. Its ctx has no deadline: the invocation's is
// inv.DeadlineAtMs, at which the host closes the instance. (A timer
// pending in the guest would also hide a deadlock from the Go runtime,
// which fails a Tool that blocks forever at once, as a tool_error.) The
// outcome it answers finishes the tool call, unless
// the tool finished it already through Services.Finish. An error fails the
// call with code tool_error, or with the code of the refused service call
// it wraps (a *HostError).
type Func func(ctx context.Context, svc Services, inv Invocation) (api.Outcome, error)

// HostError is a service call the host refused or that failed. Code is the
// API error code (not_granted, emit_limit, model_call_limit, ...); Ref
// identifies the host-side error, so that a Tool returning an error that
// wraps it fails with the same code.
type HostError struct {
	Method    string          `json:"-"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
	Ref       uint32          `json:"ref,omitempty"`
}

func (e *HostError) Error() string {
	return fmt.Sprintf("tool: %s: %s: %s", e.Method, e.Code, e.Message)
}

var exported Func

// Export makes f the Tool a Wasm build of the calling program runs for
// every invocation. Call it from an init function.
func Export(f Func) { exported = f }

// Exported answers the function given to Export, or nil.
func Exported() Func { return exported }

// OK answers an ok outcome with value (JSON; nil reads as null).
func OK(value json.RawMessage) api.Outcome {
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	return api.Outcome{Status: api.OutcomeOK, Value: value}
}

// Error answers an error outcome.
func Error(code, message string) api.Outcome {
	return api.Outcome{Status: api.OutcomeFailed, Error: &api.OutcomeError{Code: code, Message: message}}
}
