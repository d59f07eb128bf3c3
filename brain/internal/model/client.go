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

// Prepared is a request a client checked and encoded for sending. Call
// sends those bytes as they are: what was checked is what is sent, and
// the request is not built again.
type Prepared interface {
	Call(ctx context.Context, onDelta func(Delta)) (Result, error)
}

// Preparer is a Client that checks and encodes a request ahead of sending
// it, without sending anything.
type Preparer interface {
	Client
	// Prepare answers an error wrapping ErrInvalidRequest for a request
	// that Call would refuse without sending it, and the request ready to
	// send for any other. It reads req only while it runs.
	Prepare(req Request) (Prepared, error)
}

// Prepare checks and encodes req for c (see Preparer). A client that is no
// Preparer is taken to carry every request, which its Call is handed as
// it is.
func Prepare(c Client, req Request) (Prepared, error) {
	if p, ok := c.(Preparer); ok {
		return p.Prepare(req)
	}
	return deferred{c: c, req: req}, nil
}

// Check answers whether c can carry req: the error Prepare answers.
func Check(c Client, req Request) error {
	_, err := Prepare(c, req)
	return err
}

// deferred is the request of a client that prepares nothing ahead.
type deferred struct {
	c   Client
	req Request
}

func (d deferred) Call(ctx context.Context, onDelta func(Delta)) (Result, error) {
	return d.c.Call(ctx, d.req, onDelta)
}

// prepared is an encoded request body and how the client sends it.
type prepared struct {
	body []byte
	send sendFunc
}

func (p *prepared) Call(ctx context.Context, onDelta func(Delta)) (Result, error) {
	return p.send(ctx, p.body, onDelta)
}

// sendFunc posts an encoded request body and reads its answer.
type sendFunc func(ctx context.Context, body []byte, onDelta func(Delta)) (Result, error)

// prepareBody builds req's body in dialect, encodes it and pairs the
// bytes with send: the Prepare of every dialect.
func prepareBody(dialect string, req Request, body func(Request) (map[string]any, error), send sendFunc) (Prepared, error) {
	m, err := body(req)
	if err != nil {
		return nil, err
	}
	b, err := encode(dialect, m)
	if err != nil {
		return nil, err
	}
	return &prepared{body: b, send: send}, nil
}

// callPrepared is the Call of a Preparer: prepare, then send.
func callPrepared(ctx context.Context, c Preparer, req Request, onDelta func(Delta)) (Result, error) {
	p, err := c.Prepare(req)
	if err != nil {
		return Result{}, err
	}
	return p.Call(ctx, onDelta)
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
	Code string
	// Message is the failure's message. The provider's own is at most
	// MaxMessageBytes long: a longer one is kept as CutMessage makes it.
	Message   string
	Retryable bool
	// RetryAfter is how long the provider asked callers to wait before
	// trying again (its Retry-After or retry-after-ms header on a 429 or
	// 5xx answer); zero when it did not say. Nothing here waits or retries:
	// it is reported to whoever decides.
	RetryAfter time.Duration
	// head and size are, for a provider's message longer than
	// MaxMessageBytes, its first bytes and its whole length: Error answers
	// what CutMessage makes of the error's whole text, as it would of the
	// text with the whole message in it.
	head string
	size int
}

func (e *ProviderError) Error() string {
	text := "model: provider failed: " + e.Code + ": "
	if e.size > 0 {
		return CutMessage(text+e.head, len(text)+e.size)
	}
	return text + e.Message
}
