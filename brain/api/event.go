package api

import "encoding/json"

// Event is one public, committed journal record.
type Event struct {
	Sequence     uint64          `json:"sequence"`
	RecordedAtMs int64           `json:"recorded_at_ms"`
	EventType    string          `json:"event_type"`
	Data         json.RawMessage `json:"data"`
	Origin       *EventOrigin    `json:"origin,omitempty"`
}

// Origin kinds.
const (
	OriginAgentloop   = "agentloop"
	OriginTool        = "tool"
	OriginEnvironment = "environment"
)

// EnvironmentRef names one incarnation of an environment in a session.
type EnvironmentRef struct {
	Name     string `json:"name"`
	Sequence uint64 `json:"sequence"`
}

// EventOrigin is the Brain-assigned provenance of an extension event:
// {kind:"agentloop", sequence:<activation_started>}, {kind:"tool",
// sequence:<tool_call_started>} or {kind:"environment", environment}.
type EventOrigin struct {
	Kind        string          `json:"kind"`
	Sequence    uint64          `json:"sequence,omitempty"`
	Environment *EnvironmentRef `json:"environment,omitempty"`
}

// EventPage is one page of public events. NextCursor is the last returned
// sequence, or the requested cursor when the page is empty.
type EventPage struct {
	Events     []Event `json:"events"`
	NextCursor uint64  `json:"next_cursor"`
}

// Page bounds of event pages.
const (
	MaxPageEvents = 1000
	MaxPageBytes  = 8 << 20
)

// Journal record kinds.
const (
	KindSessionCreationStarted = "session_creation_started"
	KindSessionCreationEnded   = "session_creation_ended"
	KindSessionCreationFailed  = "session_creation_failed"
	KindSessionEndStarted      = "session_end_started"
	KindSessionEndFailed       = "session_end_failed"
	KindSessionEnded           = "session_ended"
	KindSessionSuspended       = "session_suspended"
	KindSessionResumed         = "session_resumed"

	KindTurnStarted        = "turn_started"
	KindTurnEnded          = "turn_ended"
	KindTurnFailed         = "turn_failed"
	KindActivationStarted  = "activation_started"
	KindActivationEnded    = "activation_ended"
	KindActivationFailed   = "activation_failed"
	KindTranscriptDelta    = "transcript_delta"
	KindTranscriptReplaced = "transcript_replaced"
	KindKVSet              = "kv_set"
	KindKVDelete           = "kv_delete"

	KindModelCallStarted  = "model_call_started"
	KindModelCallEnded    = "model_call_ended"
	KindModelCallFailed   = "model_call_failed"
	KindToolCallStarted   = "tool_call_started"
	KindToolCallEnded     = "tool_call_ended"
	KindToolCallFailed    = "tool_call_failed"
	KindToolCallReturned  = "tool_call_returned"
	KindToolResultEmitted = "tool_result_emitted"
	KindToolCancelStarted = "tool_cancel_started"
	KindToolCancelEnded   = "tool_cancel_ended"
	KindToolCancelFailed  = "tool_cancel_failed"

	KindEnvironmentSetupStarted    = "environment_setup_started"
	KindEnvironmentSetupEnded      = "environment_setup_ended"
	KindEnvironmentSetupFailed     = "environment_setup_failed"
	KindEnvironmentCallStarted     = "environment_call_started"
	KindEnvironmentCallEnded       = "environment_call_ended"
	KindEnvironmentCallFailed      = "environment_call_failed"
	KindEnvironmentDetachStarted   = "environment_detach_started"
	KindEnvironmentDetachEnded     = "environment_detach_ended"
	KindEnvironmentDetachFailed    = "environment_detach_failed"
	KindEnvironmentTeardownStarted = "environment_teardown_started"
	KindEnvironmentTeardownEnded   = "environment_teardown_ended"
	KindEnvironmentTeardownFailed  = "environment_teardown_failed"
	KindEnvironmentClosed          = "environment_closed"
	KindEnvironmentUnreachable     = "environment_unreachable"
	KindOutputEmitted              = "output_emitted"

	// KindExtensionEvent is the private frame kind that stores an
	// extension event {kind, payload}; it is projected to its own kind.
	KindExtensionEvent = "_extension_event"
)

// Effect prefixes: each has _started, _ended and _failed records.
var EffectPrefixes = []string{
	"model_call", "tool_call", "tool_cancel",
	"environment_setup", "environment_call", "environment_detach", "environment_teardown",
}

// RecordKinds lists every journal record kind Brain writes.
var RecordKinds = []string{
	KindSessionCreationStarted, KindSessionCreationEnded, KindSessionCreationFailed,
	KindSessionEndStarted, KindSessionEndFailed, KindSessionEnded, KindSessionSuspended, KindSessionResumed,
	KindTurnStarted, KindTurnEnded, KindTurnFailed,
	KindActivationStarted, KindActivationEnded, KindActivationFailed,
	KindTranscriptDelta, KindTranscriptReplaced, KindKVSet, KindKVDelete,
	KindModelCallStarted, KindModelCallEnded, KindModelCallFailed,
	KindToolCallStarted, KindToolCallEnded, KindToolCallFailed, KindToolCallReturned, KindToolResultEmitted,
	KindToolCancelStarted, KindToolCancelEnded, KindToolCancelFailed,
	KindEnvironmentSetupStarted, KindEnvironmentSetupEnded, KindEnvironmentSetupFailed,
	KindEnvironmentCallStarted, KindEnvironmentCallEnded, KindEnvironmentCallFailed,
	KindEnvironmentDetachStarted, KindEnvironmentDetachEnded, KindEnvironmentDetachFailed,
	KindEnvironmentTeardownStarted, KindEnvironmentTeardownEnded, KindEnvironmentTeardownFailed,
	KindEnvironmentClosed, KindEnvironmentUnreachable, KindOutputEmitted, KindExtensionEvent,
	// Live-only frames.
	LiveModelOutput, LiveModelRequest, LiveModelUsage,
}

// Live-only frame types on the events stream; never journalled.
const (
	LiveModelOutput  = "model_output"
	LiveModelRequest = "model_request"
	LiveModelUsage   = "model_usage"
)

// Failure codes of *_failed records and failed turns.
const (
	FailureInterrupted                  = "interrupted"
	FailureCancelled                    = "cancelled"
	FailureTimeout                      = "timeout"
	FailureUnknown                      = "unknown"
	FailureModelCallLimit               = "model_call_limit"
	FailureEmitLimit                    = "emit_limit"
	FailureAgentloopFailed              = "agentloop_failed"
	FailureToolError                    = "tool_error"
	FailureEnvironmentPreparationFailed = "environment_preparation_failed"
	FailureEnvironmentError             = "environment_error"
	FailureInvalidTranscript            = "invalid_transcript"
	FailureDecisionLimit                = "decision_limit"
	FailureEnvironmentNotReady          = "environment_not_ready"
	// FailureEnvironmentIncarnationStale ends a tool call pinned by
	// environment_sequence to an incarnation that is no longer current.
	FailureEnvironmentIncarnationStale = "environment_incarnation_stale"
)

// FailureCodes lists the failure codes above.
var FailureCodes = []string{
	FailureInterrupted, FailureCancelled, FailureTimeout, FailureUnknown, FailureModelCallLimit,
	FailureEmitLimit, FailureAgentloopFailed, FailureToolError, FailureEnvironmentPreparationFailed,
	FailureEnvironmentError, FailureInvalidTranscript, FailureDecisionLimit, FailureEnvironmentNotReady,
	FailureEnvironmentIncarnationStale,
}

// Failure is the payload of *_failed records and failed turns.
type Failure struct {
	Code      string          `json:"code"`
	Message   string          `json:"message,omitempty"`
	Retryable bool            `json:"retryable"`
	Ambiguous bool            `json:"ambiguous"`
	Sequence  uint64          `json:"sequence,omitempty"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// IsReserved reports whether an extension may not emit kind: names with a
// leading underscore, journal record kinds, live frame names, API error
// codes and failure codes.
func IsReserved(kind string) bool {
	if kind == "" || kind[0] == '_' {
		return true
	}
	_, ok := reserved[kind]
	return ok
}

var reserved = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, list := range [][]string{RecordKinds, ErrorCodes, FailureCodes} {
		for _, k := range list {
			m[k] = struct{}{}
		}
	}
	for _, p := range EffectPrefixes {
		for _, s := range []string{"_started", "_ended", "_failed"} {
			m[p+s] = struct{}{}
		}
	}
	return m
}()
