package model

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// Wire types of the model service.
type (
	// Request is a model request (messages, system, tools, options).
	Request = api.ModelRequest
	// Result is a model result (message, stop reason, usage).
	Result = api.ModelResult
	// StopReason says why the model stopped.
	StopReason = api.StopReason
	// Usage counts tokens.
	Usage = api.Usage
)

// Delta is one live fragment of streamed model output. It is never
// journalled.
type Delta struct {
	Text string `json:"text"`
}

// Client calls one model. Call blocks until the model answers or ctx ends;
// when onDelta is non-nil a streaming client reports output fragments to it
// before returning. Implementations must be safe for concurrent use.
type Client interface {
	Call(ctx context.Context, req Request, onDelta func(Delta)) (Result, error)
}

// Checker is a Client that can tell, without sending anything, whether its
// dialect can carry a request: its options, response format and content.
type Checker interface {
	// Check answers an error wrapping ErrInvalidRequest for a request that
	// Call would refuse without sending it, and nil for any other.
	Check(req Request) error
}

// Check answers whether c can carry req (see Checker). A client that is no
// Checker is taken to carry every request.
func Check(c Client, req Request) error {
	if ch, ok := c.(Checker); ok {
		return ch.Check(req)
	}
	return nil
}

// Spec names the model a session pins at creation.
type Spec struct {
	Provider string
	Name     string
	APIKey   string
}

// Opener makes a client for a spec.
type Opener interface {
	Open(spec Spec) (Client, error)
}

// Providers is an Opener keyed by provider name.
type Providers map[string]func(Spec) (Client, error)

// Open makes a client for spec.Provider.
func (p Providers) Open(spec Spec) (Client, error) {
	f, ok := p[spec.Provider]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownProvider, spec.Provider)
	}
	return f(spec)
}

// ProviderScripted is the provider name of the scripted model.
const ProviderScripted = "scripted"

// Default returns the providers available without configuration: the
// scripted model.
func Default() Providers {
	return Providers{ProviderScripted: func(Spec) (Client, error) { return Scripted{}, nil }}
}

// Errors of this package.
var (
	ErrUnknownProvider = errors.New("model: unknown provider")
)

// ProviderError is a failure reported by a model provider.
type ProviderError struct {
	Code      string
	Message   string
	Retryable bool
	// RetryAfter is how long the provider asked callers to wait before
	// trying again (its Retry-After or retry-after-ms header on a 429 or
	// 5xx answer); zero when it did not say. Nothing here waits or retries:
	// it is reported to whoever decides.
	RetryAfter time.Duration
}

func (e *ProviderError) Error() string {
	return fmt.Sprintf("model: provider failed: %s: %s", e.Code, e.Message)
}
