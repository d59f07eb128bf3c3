package api

import "encoding/json"

// StopReason says why a model stopped.
type StopReason string

// Stop reasons.
const (
	StopEndTurn      StopReason = "end_turn"
	StopToolUse      StopReason = "tool_use"
	StopMaxTokens    StopReason = "max_tokens"
	StopStopSequence StopReason = "stop_sequence"
	StopRefusal      StopReason = "refusal"
	StopUnknown      StopReason = "unknown"
)

// ToolDefinition is a tool offered to a model.
type ToolDefinition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ModelRequest is the input of the model service. Absent System and Tools
// inherit the session defaults. A nil Tools is left out (the session's
// tools are offered); an empty, non-nil one is sent as [] and offers none.
type ModelRequest struct {
	Messages        []Message        `json:"messages"`
	System          *string          `json:"system,omitempty"`
	Tools           []ToolDefinition `json:"tools,omitzero"`
	ResponseFormat  json.RawMessage  `json:"response_format,omitempty"`
	MaxOutputTokens *int64           `json:"max_output_tokens,omitempty"`
	Options         json.RawMessage  `json:"options,omitempty"`
}

// Usage counts model tokens; every field is optional.
type Usage struct {
	InputTokens              *int64   `json:"input_tokens,omitempty"`
	OutputTokens             *int64   `json:"output_tokens,omitempty"`
	CacheCreationInputTokens *int64   `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64   `json:"cache_read_input_tokens,omitempty"`
	ReasoningTokens          *int64   `json:"reasoning_tokens,omitempty"`
	TotalInputTokens         *int64   `json:"total_input_tokens,omitempty"`
	ProviderCostUSD          *float64 `json:"provider_cost_usd,omitempty"`
}

// ModelResult is the answer of the model service.
type ModelResult struct {
	Message    Message    `json:"message"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
}

// ToolInvocation is one element of the dispatch input.
type ToolInvocation struct {
	CallID              string          `json:"call_id"`
	Name                string          `json:"name"`
	Environment         string          `json:"environment"`
	EnvironmentSequence uint64          `json:"environment_sequence,omitempty"`
	Input               json.RawMessage `json:"input"`
}

// ToolReturn answers one invocation: the tool_call_started sequence, the
// public events of its synchronous phase and whether it finished.
type ToolReturn struct {
	CallID   string  `json:"call_id"`
	Sequence uint64  `json:"sequence"`
	Events   []Event `json:"events"`
	Finished bool    `json:"finished"`
}

// Outcome statuses.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "error"
	OutcomeTimeout   = "timeout"
	OutcomeCancelled = "cancelled"
	OutcomeUnknown   = "unknown"
)

// OutcomeError is the error of an error outcome.
type OutcomeError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// Outcome is a tool outcome envelope.
type Outcome struct {
	Status  string          `json:"status"`
	Value   json.RawMessage `json:"value,omitempty"`
	Error   *OutcomeError   `json:"error,omitempty"`
	Message string          `json:"message,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
}

// IsError reports whether the outcome is not ok.
func (o Outcome) IsError() bool { return o.Status != OutcomeOK }

// ToolCallEnded is the payload of tool_call_ended.
type ToolCallEnded struct {
	Sequence uint64  `json:"sequence"`
	Outcome  Outcome `json:"outcome"`
	IsError  bool    `json:"is_error"`
	// Failure is the environment's failure receipt when it stopped the
	// call itself with code timeout or cancelled: its code, message,
	// retryable flag and details as it sent them (cleanup evidence, say),
	// which the bare timeout and cancelled outcomes have no room for.
	Failure *Failure `json:"failure,omitempty"`
}

// EmitInput is the input of the emit service.
type EmitInput struct {
	EventType string          `json:"event_type"`
	Data      json.RawMessage `json:"data"`
}

// KVPutInput is the input of kv_put.
type KVPutInput struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// KVReadResult answers kv_read: Value is nil when the key is absent and
// the JSON literal null when null is stored.
type KVReadResult struct {
	Value json.RawMessage `json:"value,omitempty"`
}

// ActivationTool is a tool as an activation sees it.
type ActivationTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Environments []string        `json:"environments"`
}

// Runtime is the deterministic runtime context of an activation.
type Runtime struct {
	LogicalTimeMs     int64  `json:"logical_time_ms"`
	DeterministicSeed []byte `json:"deterministic_seed"`
}

// TurnInput is what an agentloop activation receives. Input is nil for
// event-triggered activations.
type TurnInput struct {
	Input         *UserInput                 `json:"input,omitempty"`
	Transcript    []Message                  `json:"transcript"`
	KV            map[string]json.RawMessage `json:"kv"`
	Events        []Event                    `json:"events"`
	Configuration json.RawMessage            `json:"configuration"`
	System        string                     `json:"system"`
	Tools         []ActivationTool           `json:"tools"`
	Runtime       Runtime                    `json:"runtime"`
}

// TurnOutput is what an activation returns.
type TurnOutput struct {
	Result json.RawMessage `json:"result,omitempty"`
}
