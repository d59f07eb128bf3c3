package envsdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Errors reported by the SDK.
var (
	// ErrUnknown marks an uncertain dispatch: an operation error wrapping
	// it is answered with an unknown receipt. A *CallError of Brain's
	// answer ambiguous (or unknown) matches it: a provider that returns
	// the error of a service call whose effect Brain could not tell
	// answers unknown.
	ErrUnknown = errors.New("envsdk: outcome unknown")
	// ErrNotGranted is returned, without any request, for a callback method
	// the grant does not list; a *CallError of Brain's refusal (403
	// not_granted) matches it too.
	ErrNotGranted = errors.New("envsdk: method not granted")
	// ErrFinished is returned by a second Finish, and by emissions after
	// Finish.
	ErrFinished = errors.New("envsdk: invocation already finished")
	// ErrAckLost reports a Finish whose acknowledgement did not arrive (no
	// answer, a 5xx answer, an answer that is not a committed sequence):
	// the outcome may or may not have been committed, and it is never
	// retried. A Finish Brain refused matches ErrRefused instead, and one
	// that never reached Brain ErrNotSent. An Execute error wrapping it is
	// answered unknown, as one wrapping ErrUnknown is.
	ErrAckLost = errors.New("envsdk: acknowledgement lost")
	// ErrRefused is matched by a *CallError of a 4xx answer: Brain
	// refused the call, and nothing of it was committed. A 5xx answer does
	// not match it: Brain may have committed the call before it failed to
	// answer.
	ErrRefused = errors.New("envsdk: refused by Brain")
	// ErrClosed is returned by an operation context used after its
	// operation returned or was stopped, and by an Invocation whose
	// execution Brain cancelled or whose deadline passed.
	ErrClosed = errors.New("envsdk: operation context closed")
	// ErrCancelled is the context.Cause of an execution's contexts
	// (Ctx.Context, Execution.Context) once Brain cancelled it.
	ErrCancelled = errors.New("envsdk: cancelled by Brain")
	// ErrDeadline is the context.Cause of an execution's contexts once its
	// deadline passed.
	ErrDeadline = errors.New("envsdk: deadline expired")
	// ErrNotSent is matched by the error of a call that never reached
	// Brain: every connection to the grant's URL was refused (or the
	// call's context ended between such attempts, or, with net/http's own
	// transport, while a connection was being opened), so no byte of the
	// request was written and nothing of it was committed. Unlike a lost
	// acknowledgement it is a definite failure: the call may be made
	// again. A Finish that fails so was not attempted.
	ErrNotSent = errors.New("envsdk: never reached Brain")
	// ErrTooLarge is matched, with ErrRefused, by the error of a call
	// whose body Brain refused for its size (413: larger than its
	// BRAIN_MAX_REQUEST_BYTES, envapi.MaxCallBytes by default, or, for an
	// outcome posted by result, returned or finish, than its
	// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES, the bound of an execute's
	// answer). Brain recorded none of it: a Finish refused so was not attempted, and may be
	// made again with a smaller outcome (an error outcome with code
	// output_limit, say).
	ErrTooLarge = errors.New("envsdk: larger than Brain takes")
	// ErrMalformedAnswer is matched by the error of a callback call whose
	// answer is not what its method answers (not JSON, a dispatch whose
	// returns do not match its calls, a sequence that is not a positive
	// integer): nothing was read from it.
	ErrMalformedAnswer = errors.New("envsdk: malformed answer")
)

// Error is a typed provider failure, answered as
// {"type":"failure", code, message, retryable, details}.
type Error struct {
	// Code is the failure code, an identifier (envapi.Code* or one of the
	// provider's own); one that is not an identifier is answered as
	// environment_error.
	Code string
	// Message explains the failure; it is cut to envapi.MaxMessageLen on
	// the wire.
	Message string
	// Retryable is advisory: Brain never repeats an operation.
	Retryable bool
	// Details is evidence as a JSON value (see WithDetails and KeepFirst).
	Details json.RawMessage
}

// Error answers "code: message".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fail builds a failure with code and message.
func Fail(code, message string) *Error { return &Error{Code: code, Message: message} }

// Failf builds a failure with a formatted message.
func Failf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e whose details are the JSON of v. A value
// that does not marshal is recorded as its string form.
func (e *Error) WithDetails(v any) *Error {
	c := *e
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(fmt.Sprint(v))
	}
	c.Details = raw
	return &c
}

// WithRetryable returns a copy of e with Retryable set to r.
func (e *Error) WithRetryable(r bool) *Error {
	c := *e
	c.Retryable = r
	return &c
}

// KeepFirst returns the first stop cause unchanged in code and message and
// adds the cleanup failure as evidence in details.cleanup_error (merged into
// object details, or wrapping non-object details as details.cause_details).
// A nil cleanup returns first as is.
func KeepFirst(first *Error, cleanup error) *Error {
	if cleanup == nil || first == nil {
		return first
	}
	c := *first
	details := map[string]any{}
	if len(first.Details) > 0 {
		if err := json.Unmarshal(first.Details, &details); err != nil || details == nil {
			details = map[string]any{"cause_details": json.RawMessage(first.Details)}
		}
	}
	details["cleanup_error"] = cleanup.Error()
	raw, _ := json.Marshal(details)
	c.Details = raw
	return &c
}

func (e *Error) receipt() envapi.Receipt {
	code := e.Code
	if !envapi.ValidIdentifier(code) {
		code = envapi.CodeEnvironmentError
	}
	details := e.Details
	if len(details) > 0 && !json.Valid(details) {
		details, _ = json.Marshal(string(details))
	}
	return envapi.Failure(code, e.Message, e.Retryable, details)
}
