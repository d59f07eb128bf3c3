package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Sentinel errors. Each maps to an API error code through Code.
var (
	ErrNotFound        = errors.New("session: not found")
	ErrInvalid         = errors.New("session: invalid request")
	ErrBusy            = errors.New("session: another activation is running")
	ErrWrongState      = errors.New("session: operation not allowed in this state")
	ErrNotGranted      = errors.New("session: method not granted")
	ErrReservedName    = errors.New("session: reserved event name")
	ErrEmitLimit       = errors.New("session: emitted bytes budget exhausted")
	ErrModelCallLimit  = errors.New("session: model call budget exhausted")
	ErrCancelled       = errors.New("session: cancelled")
	ErrTimeout         = errors.New("session: deadline exceeded")
	ErrExecutionClosed = errors.New("session: execution is closed")
	ErrUnknownMethod   = errors.New("session: unknown method")
	ErrUnsupported     = errors.New("session: not supported")
	ErrClosed          = errors.New("session: engine is closed")
	// ErrInvalidReceipt is wrapped by an Environments error when the
	// provider answered but its answer is not a valid response for the
	// operation: the outcome is unknown, but the environment was reached,
	// so no environment_unreachable is recorded.
	ErrInvalidReceipt = errors.New("session: invalid environment response")
	// ErrUnavailable wraps a journal failure that refused an operation
	// before it committed anything (see refused): the disk is full or
	// failing, or the store turned the append away, nothing ran, and the
	// same request may be sent again. It also wraps any refused commit of
	// a synchronous turn whose claim rides the journal and that was undone
	// because nothing of it was durable, and a report refused because the
	// credential of its binding could not be read from Secrets.
	ErrUnavailable = errors.New("session: durable storage is failing; nothing was done")
)

// refused reports whether a failed append surely committed nothing: the
// disk failed it (journal.ErrWrite), or the store turned it away
// (journal.ErrOverloaded) without handing it to storage whose answer was
// lost (journal.ErrOutcomeUnknown).
func refused(err error) bool {
	return errors.Is(err, journal.ErrWrite) ||
		errors.Is(err, journal.ErrOverloaded) && !errors.Is(err, journal.ErrOutcomeUnknown)
}

// TurnError reports a turn or service failure with its failure code and,
// for a failed turn, the sequence of its turn_started record.
type TurnError struct {
	Code      string
	Message   string
	Retryable bool
	Sequence  uint64
	Err       error
}

func (e *TurnError) Error() string {
	return fmt.Sprintf("session: turn failed: %s: %s", e.Code, e.Message)
}

func (e *TurnError) Unwrap() error { return e.Err }

// failureMessage is the message recorded, and answered, for err, the
// failure that ended an activation: its text, without the "session: turn
// failed: <code>: " a *TurnError in it (a service call's failure the loop
// returned, say) puts before its message. The failure record carries the
// code, and the error of the turn says once that it failed.
func failureMessage(err error) string {
	msg := err.Error()
	var te *TurnError
	if errors.As(err, &te) && te.Message != "" {
		msg = strings.Replace(msg, te.Error(), te.Message, 1)
	}
	return boundMessage(msg)
}

// TurnFailed reports whether err is the failure of a turn that ran: a
// *TurnError naming its turn_started, answered after its turn_failed was
// committed. It is the answer to the request that started the turn,
// whatever refusal of a service call its cause wraps (an invalid
// request the loop made, a busy session it tried to control).
func TurnFailed(err error) bool {
	var te *TurnError
	return errors.As(err, &te) && te.Sequence != 0
}

// Code maps an error of this package to its API error code.
func Code(err error) string {
	var te *TurnError
	var ee *EnvironmentError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		return te.Code
	case errors.As(err, &ee):
		return api.CodeExecutorFailed
	case errors.Is(err, ErrNotFound):
		return api.CodeNotFound
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrUnknownMethod):
		return api.CodeInvalidRequest
	case errors.Is(err, ErrBusy), errors.Is(err, ErrWrongState):
		return api.CodeConflict
	case errors.Is(err, ErrNotGranted), errors.Is(err, ErrExecutionClosed):
		return api.CodeNotGranted
	case errors.Is(err, ErrReservedName):
		return api.CodeReservedName
	case errors.Is(err, ErrEmitLimit):
		return api.CodeEmitLimit
	case errors.Is(err, ErrModelCallLimit):
		return api.CodeModelCallLimit
	case errors.Is(err, ErrCancelled):
		return api.CodeCancelled
	case errors.Is(err, ErrTimeout):
		return api.CodeTimeout
	case errors.Is(err, ErrClosed):
		return api.CodeOverloaded
	}
	return api.CodeInternal
}

// APIError converts err to the ApiError body the HTTP layer answers. A busy
// submission carries details {"admission":"rejected"}.
func APIError(err error) *api.ApiError {
	code := Code(err)
	e := &api.ApiError{Code: code, Message: err.Error(), Retryable: api.DefaultRetryable(code)}
	var te *TurnError
	if errors.As(err, &te) {
		e.Message, e.Retryable = te.Message, te.Retryable
	}
	var ee *EnvironmentError
	if errors.As(err, &ee) {
		e.Message, e.Retryable = ee.Message, ee.Retryable
		if e.Message == "" {
			e.Message = ee.Code
		}
		e.Details = mustJSON(struct {
			Code      string          `json:"code"`
			Message   string          `json:"message"`
			Retryable bool            `json:"retryable"`
			Details   json.RawMessage `json:"details,omitempty"`
			Sequence  uint64          `json:"sequence,omitempty"`
		}{ee.Code, ee.Message, ee.Retryable, ee.Details, ee.Sequence})
	}
	if errors.Is(err, ErrBusy) {
		e.Details = append(json.RawMessage(nil), api.AdmissionRejected...)
	}
	return e
}

// failureCode picks the failure code recorded for an error that ended an
// activation.
func failureCode(err error) (code string, retryable bool) {
	var te *TurnError
	switch {
	case errors.As(err, &te):
		return te.Code, te.Retryable
	case errors.Is(err, ErrModelCallLimit):
		return api.FailureModelCallLimit, false
	case errors.Is(err, ErrEmitLimit):
		return api.FailureEmitLimit, false
	case errors.Is(err, ErrCancelled):
		return api.FailureCancelled, false
	case errors.Is(err, ErrTimeout):
		return api.FailureTimeout, false
	}
	return api.FailureAgentloopFailed, false
}
