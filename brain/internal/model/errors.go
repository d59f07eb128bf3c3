package model

import (
	"errors"
	"fmt"
	"unicode/utf8"

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
// otherwise unfinished response) or api.CodeModelOutputInvalid (a tool call
// that names no tool, or whose input is not a JSON object, in an otherwise
// complete response). It is never
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

// namesNoTool is the error of a tool call with no name; id is the
// provider's (redacted by the caller), shown shortened (see shown).
func namesNoTool(id string) *OutputError {
	return &OutputError{Code: api.CodeModelOutputInvalid, StopReason: api.StopToolUse,
		Message: fmt.Sprintf("tool call %q names no tool", shown(id))}
}

// invalidToolInput is the error of a tool call whose input is not a JSON
// object; name is the provider's (redacted by the caller), shown
// shortened (see shown).
func invalidToolInput(name string, err error) *OutputError {
	return &OutputError{Code: api.CodeModelOutputInvalid, StopReason: api.StopToolUse,
		Message: fmt.Sprintf("tool call %q: input is not a JSON object: %v", shown(name), err)}
}

// maxShown bounds the bytes of a provider's string an error quotes.
const maxShown = 128

// shown is s as an error quotes it: at most maxShown bytes of it, cut at
// a character's start and marked as cut, so that an answer's tool call id
// or name (which the provider may make as long as the output bound
// allows) does not make the error as long.
func shown(s string) string {
	if len(s) <= maxShown {
		return s
	}
	k := maxShown
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + "..."
}

// Partial is what a failed call had received from the provider before it
// failed: the stop reason it reported (empty when none arrived) and the
// usage counted so far. UsageComplete is true only when the provider had
// reported its final usage (an unusable but complete answer); a stream that
// broke off, or a call that was cancelled, leaves it false.
type Partial struct {
	StopReason    StopReason
	Usage         Usage
	UsageComplete bool
}

// PartialError is a call's failure together with what the provider had
// reported before it (see Partial). The underlying error is reached with
// errors.Is and errors.As as usual.
type PartialError struct {
	Partial Partial
	Err     error
}

func (e *PartialError) Error() string { return e.Err.Error() }

func (e *PartialError) Unwrap() error { return e.Err }

// withPartial wraps err with what the provider had reported.
func withPartial(err error, p Partial) error {
	if err == nil {
		return nil
	}
	return &PartialError{Partial: p, Err: err}
}
