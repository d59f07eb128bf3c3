package session

import (
	"encoding/json"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Record payloads written by the engine.
type (
	// ref is the payload of records that only reference another record.
	ref struct {
		Sequence uint64 `json:"sequence"`
	}
	turnStarted struct {
		Input api.UserInput `json:"input"`
	}
	turnEnded struct {
		Sequence uint64          `json:"sequence"`
		Result   json.RawMessage `json:"result,omitempty"`
	}
	activationStarted struct {
		// Sequence is the turn_started of a turn, 0 for an
		// event-triggered activation.
		Sequence uint64   `json:"sequence,omitempty"`
		Trigger  string   `json:"trigger"`
		Events   []uint64 `json:"events,omitempty"`
	}
	activationEnded struct {
		Sequence         uint64 `json:"sequence"`
		DeliveredThrough uint64 `json:"delivered_through"`
	}
	transcriptDelta struct {
		Keep   int           `json:"keep"`
		Append []api.Message `json:"append"`
		// Saved is the transcript length before the delta; a delta with
		// Keep < Saved replaces a tail.
		Saved int `json:"saved"`
		// Refs stand for appended messages an earlier record holds
		// (see messageRef).
		Refs []messageRef `json:"refs,omitempty"`
	}
	kvSet struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	kvDelete struct {
		Key string `json:"key"`
	}
	modelCallStarted struct {
		Messages int          `json:"messages"`
		Context  modelContext `json:"context"`
		Tools    int          `json:"tools,omitempty"`
		// Tool is the tool_call_started of a tool-originated call.
		Tool uint64 `json:"tool,omitempty"`
		// Request is what the caller set beyond the messages, when it
		// set anything (see modelOverrides).
		Request *modelOverrides `json:"request,omitempty"`
	}
	// modelOverrides holds the fields of a model request its caller set,
	// as it set them: a field it left out is null or absent here, and the
	// request took it from the session's configuration at the record's
	// sequence (a loop's call) or went without it (a tool's call). Tools
	// is null when not set, so that an empty list stays distinct;
	// ResponseFormat is null when set to null (the format reset).
	modelOverrides struct {
		System          *string              `json:"system,omitempty"`
		Tools           []api.ToolDefinition `json:"tools"`
		ResponseFormat  json.RawMessage      `json:"response_format,omitempty"`
		MaxOutputTokens *int64               `json:"max_output_tokens,omitempty"`
		Options         json.RawMessage      `json:"options,omitempty"`
	}
	modelContext struct {
		ThroughSequence uint64          `json:"through_sequence"`
		Delta           transcriptDelta `json:"delta"`
	}
	modelCallEnded struct {
		Sequence uint64          `json:"sequence"`
		Result   api.ModelResult `json:"result"`
	}
	// modelCallFailed is the failure of a model call with what the
	// provider had answered before it failed, when it answered at all.
	modelCallFailed struct {
		api.Failure
		Response *modelResponse `json:"response,omitempty"`
	}
	// modelResponse is the part of a failed call's answer that is kept:
	// the stop reason (empty when none arrived) and the usage, complete
	// only when the provider had reported its final count.
	modelResponse struct {
		StopReason    api.StopReason `json:"stop_reason,omitempty"`
		Usage         api.Usage      `json:"usage"`
		UsageComplete bool           `json:"usage_complete"`
	}
	toolCallStarted struct {
		CallID      string          `json:"call_id"`
		Name        string          `json:"name"`
		Environment string          `json:"environment"`
		Binding     uint64          `json:"binding"`
		Input       json.RawMessage `json:"input"`
		DeadlineMs  *int64          `json:"deadline_ms,omitempty"`
		Activation  uint64          `json:"activation"`
	}
	toolOutcome struct {
		Sequence uint64       `json:"sequence"`
		Outcome  *api.Outcome `json:"outcome,omitempty"`
	}
	toolResultEmitted struct {
		Sequence uint64      `json:"sequence"`
		Result   api.Outcome `json:"result"`
	}
	toolCancelStarted struct {
		TargetSequence uint64 `json:"target_sequence"`
		Environment    string `json:"environment"`
	}
	envStarted struct {
		Environment string             `json:"environment"`
		Binding     api.EnvironmentRef `json:"binding"`
		Request     envapi.Request     `json:"request"`
	}
	envEnded struct {
		Sequence uint64         `json:"sequence"`
		Receipt  envapi.Receipt `json:"receipt"`
	}
	envUnreachable struct {
		Environment string `json:"environment"`
		Sequence    uint64 `json:"sequence"`
		Message     string `json:"message"`
	}
	// envCreated is the payload of _environment_created.
	envCreated struct {
		Declaration api.Environment `json:"declaration"`
		Template    string          `json:"template"`
	}
	// envUpdated is the payload of _environment_updated and
	// _environment_deleted.
	envUpdated struct {
		Environment   api.EnvironmentRef `json:"environment"`
		Configuration json.RawMessage    `json:"configuration,omitempty"`
	}
	extensionEvent struct {
		Kind    string          `json:"kind"`
		Payload json.RawMessage `json:"payload"`
	}
)

// rec builds a record with a JSON payload.
func rec(kind string, payload any) journal.Record {
	b, err := json.Marshal(payload)
	if err != nil {
		panic("session: unencodable payload for " + kind + ": " + err.Error())
	}
	return journal.Record{Kind: kind, Data: b}
}

// failed builds a *_failed record.
func failed(kind string, f api.Failure) journal.Record { return rec(kind, boundFailure(f)) }
