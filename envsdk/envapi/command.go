package envapi

import "encoding/json"

// Command is the body Brain POSTs to {url}/v1/operations.
type Command struct {
	Contract  string    `json:"contract"`
	Operation Operation `json:"operation"`
}

// Operation names one environment operation and carries its request.
type Operation struct {
	SessionID   string `json:"session_id" validate:"identifier"`
	Environment string `json:"environment" validate:"identifier"`
	// Sequence is the journal record that started the operation (≥ 1).
	Sequence uint64  `json:"sequence" validate:"min=1"`
	Request  Request `json:"request"`
	// Binding is the pinned binding reference of the environment.
	Binding *EnvironmentRef `json:"binding,omitempty"`
	// Configuration is the binding's current configuration, forwarded
	// unread by Brain. Absent and JSON null both mean none.
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// Template names the template the environment was created from.
	Template string `json:"template,omitempty" validate:"omitempty,identifier"`
	// Context is the operation's controller grant (environments, emit,
	// result); it closes when the operation returns or is cancelled.
	Context *Grant `json:"context,omitempty"`
	// Reporter is the binding's reporter grant; it outlives the operation.
	Reporter *Grant `json:"reporter,omitempty"`
}

// EnvironmentRef names one incarnation of an environment in a session.
type EnvironmentRef struct {
	Name     string `json:"name" validate:"identifier"`
	Sequence uint64 `json:"sequence" validate:"min=1"`
}

// RequestType discriminates requests.
type RequestType string

// Request types.
const (
	RequestSetup    RequestType = "setup"
	RequestExecute  RequestType = "execute"
	RequestCall     RequestType = "call"
	RequestCancel   RequestType = "cancel"
	RequestDetach   RequestType = "detach"
	RequestTeardown RequestType = "teardown"
)

// Request is one environment/v1 request. Type selects which of the other
// fields are meaningful; the decoder rejects fields that do not belong to the
// type, and the encoder writes only those that do.
type Request struct {
	Type RequestType `json:"type"`

	// Configuration of a setup.
	Configuration json.RawMessage `json:"configuration,omitempty"`

	// Implementation, Input, DeadlineMs and Callback of an execute.
	// Input is also the input of a call.
	Implementation json.RawMessage `json:"implementation,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	// DeadlineMs is the remaining time in milliseconds; nil means no
	// deadline.
	DeadlineMs *int64 `json:"deadline_ms,omitempty"`
	Callback   *Grant `json:"callback,omitempty"`

	// Name of a call.
	Name string `json:"name,omitempty"`

	// TargetSequence of a cancel: the execute to stop.
	TargetSequence uint64 `json:"target_sequence,omitempty"`
}

// Setup builds a setup request.
func Setup(configuration json.RawMessage) Request {
	return Request{Type: RequestSetup, Configuration: configuration}
}

// Execute builds an execute request. deadline may be nil (no deadline).
func Execute(implementation, input json.RawMessage, deadlineMs *int64, callback *Grant) Request {
	return Request{Type: RequestExecute, Implementation: implementation, Input: input, DeadlineMs: deadlineMs, Callback: callback}
}

// Call builds a call request.
func Call(name string, input json.RawMessage) Request {
	return Request{Type: RequestCall, Name: name, Input: input}
}

// Cancel builds a cancel request.
func Cancel(target uint64) Request { return Request{Type: RequestCancel, TargetSequence: target} }

// Detach builds a detach request.
func Detach() Request { return Request{Type: RequestDetach} }

// Teardown builds a teardown request.
func Teardown() Request { return Request{Type: RequestTeardown} }

// Wire shapes of each request type, used for strict decoding and encoding.
type (
	setupWire struct {
		Type          RequestType     `json:"type"`
		Configuration json.RawMessage `json:"configuration,omitempty"`
	}
	executeWire struct {
		Type           RequestType     `json:"type"`
		Implementation json.RawMessage `json:"implementation" validate:"required"`
		Input          json.RawMessage `json:"input" validate:"required"`
		DeadlineMs     *int64          `json:"deadline_ms,omitempty" validate:"omitempty,min=0"`
		Callback       *Grant          `json:"callback,omitempty"`
	}
	callWire struct {
		Type  RequestType     `json:"type"`
		Name  string          `json:"name" validate:"identifier"`
		Input json.RawMessage `json:"input" validate:"required"`
	}
	cancelWire struct {
		Type           RequestType `json:"type"`
		TargetSequence uint64      `json:"target_sequence" validate:"min=1"`
	}
	emptyWire struct {
		Type RequestType `json:"type"`
	}
)

// MarshalJSON writes only the fields that belong to r.Type.
func (r Request) MarshalJSON() ([]byte, error) {
	switch r.Type {
	case RequestSetup:
		return json.Marshal(setupWire{r.Type, r.Configuration})
	case RequestExecute:
		return json.Marshal(executeWire{r.Type, r.Implementation, r.Input, r.DeadlineMs, r.Callback})
	case RequestCall:
		return json.Marshal(callWire{r.Type, r.Name, r.Input})
	case RequestCancel:
		return json.Marshal(cancelWire{r.Type, r.TargetSequence})
	default:
		return json.Marshal(emptyWire{r.Type})
	}
}

// UnmarshalJSON decodes strictly; see DecodeRequest.
func (r *Request) UnmarshalJSON(data []byte) error {
	v, err := decodeRequest(data, "request")
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// DecodeRequest decodes one request strictly.
func DecodeRequest(data []byte) (Request, error) { return decodeRequest(data, "request") }

func decodeRequest(data []byte, path string) (Request, error) {
	var head struct {
		Type *RequestType `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Request{}, fieldErr(path, err)
	}
	if head.Type == nil {
		return Request{}, &FieldError{Field: join(path, "type"), Reason: "is required"}
	}
	switch *head.Type {
	case RequestSetup:
		var w setupWire
		if err := strict(data, &w, path); err != nil {
			return Request{}, err
		}
		return Request{Type: w.Type, Configuration: w.Configuration}, nil
	case RequestExecute:
		var w executeWire
		if err := strict(data, &w, path); err != nil {
			return Request{}, err
		}
		return Request{Type: w.Type, Implementation: w.Implementation, Input: w.Input, DeadlineMs: w.DeadlineMs, Callback: w.Callback}, nil
	case RequestCall:
		var w callWire
		if err := strict(data, &w, path); err != nil {
			return Request{}, err
		}
		return Request{Type: w.Type, Name: w.Name, Input: w.Input}, nil
	case RequestCancel:
		var w cancelWire
		if err := strict(data, &w, path); err != nil {
			return Request{}, err
		}
		return Request{Type: w.Type, TargetSequence: w.TargetSequence}, nil
	case RequestDetach, RequestTeardown:
		var w emptyWire
		if err := strict(data, &w, path); err != nil {
			return Request{}, err
		}
		return Request{Type: w.Type}, nil
	default:
		return Request{}, &FieldError{Field: join(path, "type"), Reason: "unknown request type " + quote(string(*head.Type)), Unsupported: true}
	}
}

// commandWire defers decoding of nested objects so that errors carry paths.
type commandWire struct {
	Contract  *string         `json:"contract"`
	Operation json.RawMessage `json:"operation"`
}

type operationWire struct {
	SessionID     string          `json:"session_id" validate:"identifier"`
	Environment   string          `json:"environment" validate:"identifier"`
	Sequence      uint64          `json:"sequence" validate:"min=1"`
	Request       json.RawMessage `json:"request" validate:"required"`
	Binding       json.RawMessage `json:"binding,omitempty"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
	Template      string          `json:"template,omitempty" validate:"omitempty,identifier"`
	Context       json.RawMessage `json:"context,omitempty"`
	Reporter      json.RawMessage `json:"reporter,omitempty"`
}

// DecodeCommand decodes a command strictly. An error is a *FieldError naming
// the offending field. A request of an unknown type yields a *FieldError
// whose Unsupported flag is set, together with the decoded operation, so that
// a provider can answer the failure code "unsupported" with the right
// sequence.
func DecodeCommand(data []byte) (Command, error) {
	var w commandWire
	if err := strict(data, &w, ""); err != nil {
		return Command{}, err
	}
	if w.Contract == nil {
		return Command{}, &FieldError{Field: "contract", Reason: "is required"}
	}
	if *w.Contract != Contract {
		return Command{}, &FieldError{Field: "contract", Reason: "must be " + quote(Contract) + ", got " + quote(*w.Contract)}
	}
	if isAbsent(w.Operation) {
		return Command{}, &FieldError{Field: "operation", Reason: "is required"}
	}
	var o operationWire
	if err := strict(w.Operation, &o, "operation"); err != nil {
		return Command{}, err
	}
	op := Operation{
		SessionID: o.SessionID, Environment: o.Environment, Sequence: o.Sequence,
		Configuration: o.Configuration, Template: o.Template,
	}
	var err error
	if op.Binding, err = decodeOptional[EnvironmentRef](o.Binding, "operation.binding"); err != nil {
		return Command{}, err
	}
	if op.Context, err = decodeOptional[Grant](o.Context, "operation.context"); err != nil {
		return Command{}, err
	}
	if op.Reporter, err = decodeOptional[Grant](o.Reporter, "operation.reporter"); err != nil {
		return Command{}, err
	}
	cmd := Command{Contract: *w.Contract, Operation: op}
	req, err := decodeRequest(o.Request, "operation.request")
	if err != nil {
		return cmd, err
	}
	cmd.Operation.Request = req
	return cmd, nil
}

// UnmarshalJSON decodes strictly; see DecodeCommand.
func (c *Command) UnmarshalJSON(data []byte) error {
	v, err := DecodeCommand(data)
	if err != nil {
		return err
	}
	*c = v
	return nil
}
