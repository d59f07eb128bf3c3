package api

import (
	"encoding/json"
	"fmt"
	"strings"
)

// API error codes (a closed set).
const (
	CodeInvalidRequest        = "invalid_request"
	CodeUnauthorized          = "unauthorized"
	CodeNotFound              = "not_found"
	CodeConflict              = "conflict"
	CodeOverloaded            = "overloaded"
	CodeAmbiguous             = "ambiguous"
	CodeExecutorFailed        = "executor_failed"
	CodeModelProviderFailed   = "model_provider_failed"
	CodeModelOutputInvalid    = "model_output_invalid"
	CodeModelOutputIncomplete = "model_output_incomplete"
	CodeInternal              = "internal"
	// Added for service calls over HTTP.
	CodeNotGranted   = "not_granted"
	CodeReservedName = "reserved_name"
	CodeEmitLimit    = "emit_limit"
	// Failed turns answer their failure code.
	CodeAgentloopFailed = "agentloop_failed"
	CodeCancelled       = "cancelled"
	CodeModelCallLimit  = "model_call_limit"
	CodeTimeout         = "timeout"
	CodeInterrupted     = "interrupted"
)

// ErrorCodes lists the closed set of API error codes.
var ErrorCodes = []string{
	CodeInvalidRequest, CodeUnauthorized, CodeNotFound, CodeConflict, CodeOverloaded,
	CodeAmbiguous, CodeExecutorFailed, CodeModelProviderFailed, CodeModelOutputInvalid,
	CodeModelOutputIncomplete, CodeInternal, CodeNotGranted, CodeReservedName, CodeEmitLimit,
	CodeAgentloopFailed, CodeCancelled, CodeModelCallLimit, CodeTimeout, CodeInterrupted,
}

// AdmissionRejected is the details of a submission refused because the
// session is busy: {"admission":"rejected"}.
var AdmissionRejected = json.RawMessage(`{"admission":"rejected"}`)

// ApiError is the body of every non-2xx answer.
type ApiError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable bool            `json:"retryable"`
	Details   json.RawMessage `json:"details,omitempty"`
}

func (e *ApiError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Is reports whether target is an *ApiError of e's code, whatever the
// messages, details and retryable flags of the two: errors.Is(err,
// ErrNotFound) tells an error that is, or wraps, an answer of code
// not_found. errors.As finds the answer itself.
func (e *ApiError) Is(target error) bool {
	t, ok := target.(*ApiError)
	return ok && e != nil && t != nil && t.Code == e.Code
}

// The errors of the codes, one for each, to test an error's code with
// errors.Is. They are never answered themselves: an answer carries its
// own message and details.
var (
	ErrInvalidRequest        = codeError(CodeInvalidRequest)
	ErrUnauthorized          = codeError(CodeUnauthorized)
	ErrNotFound              = codeError(CodeNotFound)
	ErrConflict              = codeError(CodeConflict)
	ErrOverloaded            = codeError(CodeOverloaded)
	ErrAmbiguous             = codeError(CodeAmbiguous)
	ErrExecutorFailed        = codeError(CodeExecutorFailed)
	ErrModelProviderFailed   = codeError(CodeModelProviderFailed)
	ErrModelOutputInvalid    = codeError(CodeModelOutputInvalid)
	ErrModelOutputIncomplete = codeError(CodeModelOutputIncomplete)
	ErrInternal              = codeError(CodeInternal)
	ErrNotGranted            = codeError(CodeNotGranted)
	ErrReservedName          = codeError(CodeReservedName)
	ErrEmitLimit             = codeError(CodeEmitLimit)
	ErrAgentloopFailed       = codeError(CodeAgentloopFailed)
	ErrCancelled             = codeError(CodeCancelled)
	ErrModelCallLimit        = codeError(CodeModelCallLimit)
	ErrTimeout               = codeError(CodeTimeout)
	ErrInterrupted           = codeError(CodeInterrupted)
)

// codeError answers the error that stands for code: its message is the
// code's, and its retryable flag the code's default.
func codeError(code string) *ApiError {
	return &ApiError{Code: code, Message: strings.ReplaceAll(code, "_", " "), Retryable: DefaultRetryable(code)}
}

// DefaultRetryable is the default retryable flag of code.
func DefaultRetryable(code string) bool {
	return code == CodeOverloaded || code == CodeExecutorFailed
}
