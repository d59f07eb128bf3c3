package model

import (
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/api"
)

// More errors of this package.
var (
	// ErrInvalidSpec reports a spec a client cannot be opened for.
	ErrInvalidSpec = errors.New("model: invalid model spec")
	// ErrInvalidRequest reports a request the dialect cannot carry (an
	// unknown option, a content block it has no form for); nothing is sent.
	ErrInvalidRequest = errors.New("model: request not supported by the dialect")
)

// OutputError reports a provider answer Brain cannot use. Code is
// api.CodeModelOutputIncomplete (tool calls in a length-limited, refused or
// otherwise unfinished response) or api.CodeModelOutputInvalid (tool input
// that is not a JSON object in an otherwise complete response). It is never
// retryable: the same request may answer the same way.
type OutputError struct {
	Code       string
	Message    string
	StopReason StopReason
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("model: %s: %s", e.Code, e.Message)
}

func incomplete(stop StopReason, n int) *OutputError {
	return &OutputError{Code: api.CodeModelOutputIncomplete, StopReason: stop,
		Message: fmt.Sprintf("%d tool call(s) in a response that stopped with %s", n, stop)}
}

func invalidToolInput(name string, err error) *OutputError {
	return &OutputError{Code: api.CodeModelOutputInvalid, StopReason: api.StopToolUse,
		Message: fmt.Sprintf("tool call %q: input is not a JSON object: %v", name, err)}
}
