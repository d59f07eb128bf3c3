package envapi

import (
	"encoding/json"
	"unicode/utf8"
)

// OutcomeStatus discriminates outcomes.
type OutcomeStatus string

// Outcome statuses. Every status but ok makes the Tool result an error.
const (
	StatusOK        OutcomeStatus = "ok"
	StatusError     OutcomeStatus = "error"
	StatusTimeout   OutcomeStatus = "timeout"
	StatusCancelled OutcomeStatus = "cancelled"
	StatusUnknown   OutcomeStatus = "unknown"
)

// Outcome is the Tool outcome envelope taken by the result, returned and
// finish services, optionally with model-facing Content (a ToolOutput):
//
//	{"status":"ok", "value": ANY}
//	{"status":"error", "error": {"code", "message", "retryable", "details"?}}
//	{"status":"timeout"}
//	{"status":"cancelled"}
//	{"status":"unknown", "message": STRING}
type Outcome struct {
	Status  OutcomeStatus   `json:"status"`
	Value   json.RawMessage `json:"value,omitempty"`
	Error   *OutcomeError   `json:"error,omitempty"`
	Message string          `json:"message,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
}

// OutcomeError is the error of an error outcome.
type OutcomeError struct {
	Code      string          `json:"code" validate:"identifier"`
	Message   string          `json:"message" validate:"max=4096"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

// OK builds an ok outcome; a nil value is JSON null.
func OK(value json.RawMessage) Outcome { return Outcome{Status: StatusOK, Value: orNull(value)} }

// ErrorOutcome builds an error outcome.
func ErrorOutcome(code, message string, retryable bool, details json.RawMessage) Outcome {
	return Outcome{Status: StatusError, Error: &OutcomeError{Code: code, Message: Truncate(message), Retryable: retryable, Details: details}}
}

// UnknownOutcome builds an unknown outcome.
func UnknownOutcome(message string) Outcome {
	return Outcome{Status: StatusUnknown, Message: Truncate(message)}
}

// IsError reports whether the outcome makes a Tool result an error.
func (o Outcome) IsError() bool { return o.Status != StatusOK }

type (
	okWire struct {
		Status  OutcomeStatus   `json:"status"`
		Value   json.RawMessage `json:"value" validate:"required"`
		Content json.RawMessage `json:"content,omitempty"`
	}
	errorWire struct {
		Status  OutcomeStatus   `json:"status"`
		Error   *errorBodyWire  `json:"error" validate:"required"`
		Content json.RawMessage `json:"content,omitempty"`
	}
	errorBodyWire struct {
		Code      string          `json:"code" validate:"identifier"`
		Message   string          `json:"message" validate:"max=4096"`
		Retryable bool            `json:"retryable"`
		Details   json.RawMessage `json:"details,omitempty"`
	}
	bareWire struct {
		Status  OutcomeStatus   `json:"status"`
		Content json.RawMessage `json:"content,omitempty"`
	}
	unknownOutcomeWire struct {
		Status  OutcomeStatus   `json:"status"`
		Message string          `json:"message" validate:"max=4096"`
		Content json.RawMessage `json:"content,omitempty"`
	}
)

// MarshalJSON writes only the fields that belong to o.Status.
func (o Outcome) MarshalJSON() ([]byte, error) {
	switch o.Status {
	case StatusOK:
		return json.Marshal(okWire{o.Status, orNull(o.Value), o.Content})
	case StatusError:
		e := o.Error
		if e == nil {
			e = &OutcomeError{}
		}
		return json.Marshal(errorWire{o.Status, &errorBodyWire{e.Code, e.Message, e.Retryable, e.Details}, o.Content})
	case StatusUnknown:
		return json.Marshal(unknownOutcomeWire{o.Status, o.Message, o.Content})
	}
	return json.Marshal(bareWire{o.Status, o.Content})
}

// UnmarshalJSON decodes strictly; see DecodeOutcome.
func (o *Outcome) UnmarshalJSON(data []byte) error {
	v, err := decodeOutcome(data, "")
	if err != nil {
		return err
	}
	*o = v
	return nil
}

// DecodeOutcome decodes an Outcome (or ToolOutput) strictly. A document
// whose status is not one of the five is an error (invalid_output).
func DecodeOutcome(data []byte) (Outcome, error) { return decodeOutcome(data, "") }

func decodeOutcome(data []byte, path string) (Outcome, error) {
	if path == "" && !utf8.Valid(data) {
		return Outcome{}, &FieldError{Field: path, Reason: "malformed JSON: not valid UTF-8"}
	}
	var head struct {
		Status *OutcomeStatus `json:"status"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Outcome{}, fieldErr(path, err)
	}
	if head.Status == nil {
		return Outcome{}, &FieldError{Field: join(path, "status"), Reason: "is required"}
	}
	switch *head.Status {
	case StatusOK:
		var w okWire
		if err := strict(data, &w, path); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: w.Status, Value: w.Value, Content: w.Content}, nil
	case StatusError:
		var w errorWire
		if err := strict(data, &w, path); err != nil {
			return Outcome{}, err
		}
		e := w.Error
		return Outcome{Status: w.Status, Error: &OutcomeError{e.Code, e.Message, e.Retryable, e.Details}, Content: w.Content}, nil
	case StatusTimeout, StatusCancelled:
		var w bareWire
		if err := strict(data, &w, path); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: w.Status, Content: w.Content}, nil
	case StatusUnknown:
		var w unknownOutcomeWire
		if err := strict(data, &w, path); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: w.Status, Message: w.Message, Content: w.Content}, nil
	}
	return Outcome{}, &FieldError{Field: join(path, "status"), Reason: "unknown outcome status " + quote(string(*head.Status)), Unsupported: true}
}
