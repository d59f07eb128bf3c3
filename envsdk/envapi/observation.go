package envapi

import "encoding/json"

// Observation scopes.
const (
	ScopeEnvironment = "environment"
	ScopeResource    = "resource"
	ScopeOperation   = "operation"
)

// Availability values of an environment observation.
const (
	Available   = "available"
	Unavailable = "unavailable"
	Unreachable = "unknown"
)

// Observation is an actionable fact a provider reports about a binding:
//
//	{"scope":"environment", "availability": "available"|"unavailable"|"unknown", "message"}
//	{"scope":"resource", "resource": ID, "code": ID, "message"}
//	{"scope":"operation", "sequence": N, "resolution": {"status": "ready"|"deleted"|"detached"}
//	                                   | {"status":"failed", "error": OutcomeError}}
type Observation struct {
	Scope        string      `json:"scope" validate:"oneof=environment resource operation"`
	Availability string      `json:"availability,omitempty" validate:"omitempty,oneof=available unavailable unknown"`
	Resource     string      `json:"resource,omitempty"`
	Code         string      `json:"code,omitempty" validate:"omitempty,identifier"`
	Message      string      `json:"message,omitempty" validate:"max=4096"`
	Sequence     uint64      `json:"sequence,omitempty"`
	Resolution   *Resolution `json:"resolution,omitempty"`
}

// Resolution confirms how a pending lifecycle operation ended.
type Resolution struct {
	Status string        `json:"status" validate:"oneof=ready deleted detached failed"`
	Error  *OutcomeError `json:"error,omitempty"`
}

// ValidateObservation checks the fields each scope requires.
func ValidateObservation(o *Observation) error {
	if err := validateStruct(o, "observation"); err != nil {
		return err
	}
	switch o.Scope {
	case ScopeEnvironment:
		if o.Availability == "" {
			return &FieldError{Field: "observation.availability", Reason: "is required for scope environment"}
		}
	case ScopeResource:
		if o.Resource == "" {
			return &FieldError{Field: "observation.resource", Reason: "is required for scope resource"}
		}
		if o.Code == "" {
			return &FieldError{Field: "observation.code", Reason: "is required for scope resource"}
		}
	case ScopeOperation:
		if o.Sequence < 1 {
			return &FieldError{Field: "observation.sequence", Reason: "must be at least 1"}
		}
		if o.Resolution == nil {
			return &FieldError{Field: "observation.resolution", Reason: "is required for scope operation"}
		}
		if o.Resolution.Status == "failed" && o.Resolution.Error == nil {
			return &FieldError{Field: "observation.resolution.error", Reason: "is required for a failed resolution"}
		}
	}
	return nil
}

// ReporterEvent is the body POSTed to a reporter grant: a diagnostic
// {"type":"event", "event_type", "data"} or an actionable
// {"type":"result", "output": {"observation", "content"?}}.
type ReporterEvent struct {
	Type      string          `json:"type" validate:"oneof=event result"`
	EventType string          `json:"event_type,omitempty" validate:"omitempty,identifier"`
	Data      json.RawMessage `json:"data,omitempty"`
	Output    *ReporterOutput `json:"output,omitempty"`
}

// ReporterOutput carries an observation and optional model-facing content.
type ReporterOutput struct {
	Observation Observation     `json:"observation"`
	Content     json.RawMessage `json:"content,omitempty"`
}

// DecodeReporterEvent decodes a reporter body strictly.
func DecodeReporterEvent(data []byte) (ReporterEvent, error) {
	var e ReporterEvent
	if err := strict(data, &e, ""); err != nil {
		return ReporterEvent{}, err
	}
	switch e.Type {
	case "event":
		if e.EventType == "" {
			return ReporterEvent{}, &FieldError{Field: "event_type", Reason: "is required for type event"}
		}
		if e.Output != nil {
			return ReporterEvent{}, &FieldError{Field: "output", Reason: "is not allowed for type event"}
		}
	case "result":
		if e.Output == nil {
			return ReporterEvent{}, &FieldError{Field: "output", Reason: "is required for type result"}
		}
		if e.EventType != "" || e.Data != nil {
			return ReporterEvent{}, &FieldError{Field: "event_type", Reason: "is not allowed for type result"}
		}
		if err := ValidateObservation(&e.Output.Observation); err != nil {
			var fe *FieldError
			if ok := asFieldError(err, &fe); ok {
				fe.Field = "output." + fe.Field
			}
			return ReporterEvent{}, err
		}
	}
	return e, nil
}

func asFieldError(err error, fe **FieldError) bool {
	e, ok := err.(*FieldError)
	if ok {
		*fe = e
	}
	return ok
}
