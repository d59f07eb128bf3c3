package api

import "encoding/json"

// HostRegistration answers POST /v1/hosts: the host's id and the bearer
// token of its /v1/hosts/{host_id}/... routes (shown once; Brain keeps
// only its digest).
type HostRegistration struct {
	HostID string `json:"host_id"`
	Token  string `json:"token"`
}

// Host command operation types.
const (
	HostInvokeTool = "invoke_tool"
	HostCancelTool = "cancel_tool"
)

// HostCommand is one frame (event: command) of a host's commands stream.
// Each command is written once, to the connection open when it was
// issued; a reconnect never replays it.
type HostCommand struct {
	SessionID   string `json:"session_id"`
	Sequence    uint64 `json:"sequence"`
	Environment string `json:"environment"`
	Template    string `json:"template,omitempty"`
	// DeadlineAtMs is the absolute Unix time in milliseconds at which the
	// tool times out (absent: no deadline).
	DeadlineAtMs *int64        `json:"deadline_at_ms,omitempty"`
	Operation    HostOperation `json:"operation"`
}

// HostOperation is {type:"invoke_tool", name, input} or
// {type:"cancel_tool", target_sequence}.
type HostOperation struct {
	Type           string          `json:"type"`
	Name           string          `json:"name,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	TargetSequence uint64          `json:"target_sequence,omitempty"`
}

// Tool execution update types.
const (
	UpdateResult   = "result"
	UpdateReturned = "returned"
	UpdateFinish   = "finish"
)

// ToolExecutionUpdate is what a host reports about a tool call: a result
// (tool_result_emitted), the end of the synchronous phase (returned) or
// the end of the call (finish), with the same meaning as the callback
// methods of that name.
type ToolExecutionUpdate struct {
	Type    string   `json:"type"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// HostResult is the body of POST /v1/hosts/{host_id}/results.
type HostResult struct {
	SessionID string              `json:"session_id"`
	Sequence  uint64              `json:"sequence"`
	Update    ToolExecutionUpdate `json:"update"`
}

// HostEvent is the body of POST /v1/hosts/{host_id}/events: an extension
// event of the tool call.
type HostEvent struct {
	SessionID string          `json:"session_id"`
	Sequence  uint64          `json:"sequence"`
	EventType string          `json:"event_type"`
	Data      json.RawMessage `json:"data"`
}

// HostModelCall is the body of POST /v1/hosts/{host_id}/model.
type HostModelCall struct {
	SessionID string       `json:"session_id"`
	Sequence  uint64       `json:"sequence"`
	Request   ModelRequest `json:"request"`
}

// HostServiceCall is the body of POST /v1/hosts/{host_id}/call: any
// service method granted to the tool, by name.
type HostServiceCall struct {
	SessionID string      `json:"session_id"`
	Sequence  uint64      `json:"sequence"`
	Call      ServiceCall `json:"call"`
}

// ServiceCall names a service method and its input.
type ServiceCall struct {
	Method string          `json:"method"`
	Input  json.RawMessage `json:"input"`
}

// HostSuspend is the body of POST /v1/hosts/{host_id}/suspend: the host
// asks to close its commands connection (named by the Brain-Host-Connection
// header of its stream) without losing work. It is suspended only while no
// command it carries is outstanding.
type HostSuspend struct {
	Connection string `json:"connection"`
}

// HostSuspended answers HostSuspend.
type HostSuspended struct {
	Suspended bool `json:"suspended"`
}

// SequenceAnswer is {sequence}: the committed record of an update.
type SequenceAnswer struct {
	Sequence uint64 `json:"sequence"`
}
