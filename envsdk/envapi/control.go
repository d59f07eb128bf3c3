package envapi

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Control operations of an EnvironmentControlRequest.
const (
	ControlList   = "list"
	ControlGet    = "get"
	ControlCreate = "create"
	ControlSetup  = "setup"
	ControlUpdate = "update"
	ControlDelete = "delete"
	ControlCall   = "call"
)

// ControlRequest is an EnvironmentControlRequest, taken by the session API's
// POST /v1/sessions/{id}/environments and by the environments service:
//
//	{"operation":"list"}
//	{"operation":"get", "environment": REF}
//	{"operation":"create", "template": ID, "name": ID, "configuration": ANY}
//	{"operation":"setup", "environment": REF}
//	{"operation":"update", "environment": REF, "configuration": ANY}
//	{"operation":"delete", "environment": REF}
//	{"operation":"call", "environment": REF, "method": ID, "input": ANY}
type ControlRequest struct {
	Operation     string          `json:"operation" validate:"oneof=list get create setup update delete call"`
	Environment   *EnvironmentRef `json:"environment,omitempty"`
	Template      string          `json:"template,omitempty" validate:"omitempty,identifier"`
	Name          string          `json:"name,omitempty" validate:"omitempty,identifier"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
	Method        string          `json:"method,omitempty" validate:"omitempty,identifier"`
	Input         json.RawMessage `json:"input,omitempty"`
}

// DecodeControlRequest decodes a control request strictly, checking the
// fields each operation requires and refusing those it does not take.
func DecodeControlRequest(data []byte) (ControlRequest, error) {
	var c ControlRequest
	if err := strict(data, &c, ""); err != nil {
		return ControlRequest{}, err
	}
	need := map[string][]string{
		ControlList:   {},
		ControlGet:    {"environment"},
		ControlCreate: {"template", "name"},
		ControlSetup:  {"environment"},
		ControlUpdate: {"environment", "configuration"},
		ControlDelete: {"environment"},
		ControlCall:   {"environment", "method"},
	}[c.Operation]
	allowed := map[string]bool{}
	for _, f := range need {
		allowed[f] = true
	}
	if c.Operation == ControlCreate {
		allowed["configuration"] = true
	}
	if c.Operation == ControlCall {
		allowed["input"] = true
	}
	present := map[string]bool{
		"environment":   c.Environment != nil,
		"template":      c.Template != "",
		"name":          c.Name != "",
		"configuration": c.Configuration != nil,
		"method":        c.Method != "",
		"input":         c.Input != nil,
	}
	for _, f := range need {
		if !present[f] {
			return ControlRequest{}, &FieldError{Field: f, Reason: "is required for operation " + c.Operation}
		}
	}
	for _, f := range []string{"environment", "template", "name", "configuration", "method", "input"} {
		if present[f] && !allowed[f] {
			return ControlRequest{}, &FieldError{Field: f, Reason: "is not allowed for operation " + c.Operation}
		}
	}
	return c, nil
}

// EnvironmentView describes one environment binding to a controller.
type EnvironmentView struct {
	Reference        EnvironmentRef        `json:"reference"`
	Template         string                `json:"template,omitempty"`
	Lifecycle        string                `json:"lifecycle"`
	State            string                `json:"state"`
	Configuration    json.RawMessage       `json:"configuration"`
	Methods          map[string]MethodSpec `json:"methods"`
	Tools            []ToolDefinition      `json:"tools"`
	Availability     string                `json:"availability,omitempty"`
	Observation      *Observation          `json:"observation,omitempty"`
	ObservedAtMs     int64                 `json:"observed_at_ms,omitempty"`
	PendingOperation *uint64               `json:"pending_operation,omitempty"`
}

// Environment states.
const (
	StateDeclared = "declared"
	StateStarting = "starting"
	StateReady    = "ready"
	StateFailed   = "failed"
	StateUnknown  = "unknown"
	StateDeleting = "deleting"
	StateDeleted  = "deleted"
	StateDetached = "detached"
)

// MethodSpec publishes a provider method callable with a call request.
type MethodSpec struct {
	Description  string          `json:"description"`
	Effect       string          `json:"effect,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ToolDefinition is a Tool as a model sees it.
type ToolDefinition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ToolInvocation is one element of the dispatch service's input.
type ToolInvocation struct {
	CallID              string          `json:"call_id"`
	Name                string          `json:"name"`
	Environment         string          `json:"environment"`
	EnvironmentSequence uint64          `json:"environment_sequence,omitempty"`
	Input               json.RawMessage `json:"input"`
}

// ToolReturn is one element of the dispatch service's result, in call order.
type ToolReturn struct {
	CallID   string            `json:"call_id"`
	Sequence uint64            `json:"sequence"`
	Events   []json.RawMessage `json:"events"`
	Finished bool              `json:"finished"`
}

// EmitInput is the input of the emit service.
type EmitInput struct {
	EventType string          `json:"event_type"`
	Data      json.RawMessage `json:"data"`
}

// KVPut is the input of the kv_put service.
type KVPut struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// CallIDs tells apart the calls of one dispatch by their call_id, as Brain
// does before it starts any of them: a call's result is matched to it by
// its call_id (a tool_result's tool_use_id). Make one per dispatch.
type CallIDs map[string]bool

// Add notes the call_id of call i, refusing one that is empty or repeated
// in the dispatch.
func (s CallIDs) Add(i int, id string) error {
	if id == "" || s[id] {
		return errors.New("call " + strconv.Itoa(i) + ": call_id " + strconv.Quote(id) + " is empty or repeated in the dispatch")
	}
	s[id] = true
	return nil
}
