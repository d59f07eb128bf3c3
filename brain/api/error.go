package api

import (
	"encoding/json"
	"fmt"
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

// DefaultRetryable is the default retryable flag of code.
func DefaultRetryable(code string) bool {
	return code == CodeOverloaded || code == CodeExecutorFailed
}
