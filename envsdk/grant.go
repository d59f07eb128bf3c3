package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/propagation"
)

// maxGrantResponse bounds what a grant call reads back.
const maxGrantResponse = 32 << 20

// grantTimeout bounds a grant call made with the default client under a
// context without a deadline. A call under a deadline (an execution's
// context carries the execution's) is bounded by that deadline alone: a
// model call or a dispatch may rightly take longer.
var grantTimeout = 2 * time.Minute

// CallError is a non-2xx answer of a grant call, with the service's
// ApiError fields when it sent them.
type CallError struct {
	// Method is the grant method called ("reporter" for a reporter post).
	Method string
	// Status is the HTTP status of the answer.
	Status int
	// Code and Message are the ApiError's, empty when the body was not
	// one, each cut to envapi.MaxMessageLen.
	Code    string
	Message string
}

// Is reports a 4xx answer as ErrRefused: Brain refused the call, and
// nothing of it was committed (a 5xx answer is no refusal: the call may
// have been committed before Brain failed to answer). A refusal of a
// method the grant does not hold (403 not_granted) is ErrNotGranted too,
// as a refusal made without a request is. A refusal of a body larger than
// Brain takes (413) is ErrTooLarge too. An answer that is no refusal
// and whose code is ambiguous or unknown (Brain could not tell whether
// the call took effect) is ErrUnknown: an operation that fails with it is
// answered unknown, not as a failure.
func (e *CallError) Is(target error) bool {
	switch target {
	case ErrUnknown:
		return (e.Status < 400 || e.Status > 499) && (e.Code == codeAmbiguous || e.Code == string(envapi.ReceiptUnknown))
	case ErrTooLarge:
		return e.Status == http.StatusRequestEntityTooLarge
	case ErrRefused:
		return e.Status >= 400 && e.Status <= 499
	case ErrNotGranted:
		return e.Status == http.StatusForbidden && e.Code == "not_granted"
	}
	return false
}

// Error names the method, the status and the service's code and message.
func (e *CallError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("envsdk: %s answered %d %s: %s", e.Method, e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("envsdk: %s answered %d", e.Method, e.Status)
}

// codeAmbiguous is the code of Brain's answer to a call whose effect it
// cannot tell (a forwarded call that lost its answer, a claimed request
// with no recorded answer).
const codeAmbiguous = "ambiguous"

// caller POSTs to service grants.
//
// Retry rule: a grant call is repeated only when the connection was refused
// before any byte of the request was written (a failed dial). Such a request
// provably never reached Brain, so repeating it cannot apply an effect
// twice. Every other failure — a reset, a timeout, a 5xx — may follow
// delivery and is returned to the caller as is, never repeated. A call all
// of whose attempts were refused so, or whose context ended while its
// connection was being opened (told by net/http's own transport only),
// fails with ErrNotSent.
type caller struct {
	client *retryablehttp.Client
	// owned: the HTTP client and its transport are the caller's own (no
	// Options.Client was given), so closeIdle may close its connections.
	owned bool
	// bound is the timeout of a call whose context has no deadline (0:
	// none beyond the client's own).
	bound time.Duration
	// traced: the client's transport is net/http's, which reports through
	// httptrace when a request has its connection (before that, no byte
	// of it was written).
	traced bool
}

func newCaller(hc *http.Client) *caller {
	var bound time.Duration
	owned := hc == nil
	if owned {
		// A transport of its own, whose idle connections closeIdle
		// closes without touching those of the rest of the program.
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		bound = grantTimeout
	}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = hc
	rc.Logger = nil
	rc.RetryMax = 3
	rc.RetryWaitMin = 20 * time.Millisecond
	rc.RetryWaitMax = 200 * time.Millisecond
	rc.CheckRetry = func(ctx context.Context, _ *http.Response, err error) (bool, error) {
		if err == nil {
			// An answer arrived: it is read (or fails to be) whatever
			// happens to ctx now.
			return false, nil
		}
		if !notSent(err) {
			a, ok := ctx.Value(attemptsKey{}).(*attempts)
			if ok && !(a.traced && !a.connected.Load() && ctx.Err() != nil && errors.Is(err, ctx.Err())) {
				// Only a call whose context ended before it had a
				// connection (as a transport that reports its
				// connections tells) provably wrote nothing.
				a.reached.Store(true)
			}
			return false, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return true, nil
	}
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	_, std := hc.Transport.(*http.Transport)
	return &caller{client: rc, owned: owned, bound: bound, traced: hc.Transport == nil || std}
}

// closeIdle closes the idle connections of the caller's own client (none
// of a client the provider gave): a later call opens a new one.
func (c *caller) closeIdle() {
	if c.owned {
		c.client.HTTPClient.CloseIdleConnections()
	}
}

// attempts records, for one call, whether any of its attempts may have
// reached Brain, and whether one had a connection to write to. connected
// is told only by a transport that reports its connections (traced).
type attempts struct {
	reached   atomic.Bool
	connected atomic.Bool
	traced    bool
}

type attemptsKey struct{}

// notSent reports whether err is a failure to connect, which happens before
// any byte of the request is written.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// post sends body to url with the bearer token and returns the response
// body of a 2xx answer.
func (c *caller) post(ctx context.Context, url, token, method string, body any) (json.RawMessage, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("envsdk: encode %s: %w", method, err)
	}
	if _, ok := ctx.Deadline(); !ok && c.bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.bound)
		defer cancel()
	}
	tried := &attempts{traced: c.traced}
	ctx = context.WithValue(ctx, attemptsKey{}, tried)
	if c.traced {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { tried.connected.Store(true) },
		})
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("envsdk: %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	// A call made under the operation's context continues its trace.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.client.Do(req)
	if err != nil {
		if resp != nil {
			// An http.Client whose CheckRedirect failed answers both.
			resp.Body.Close()
		}
		if !tried.reached.Load() {
			// Every connection was refused before a byte was written
			// (or ctx ended between such attempts, or while one was
			// being opened): nothing reached Brain.
			return nil, fmt.Errorf("envsdk: %s: %w: %w", method, ErrNotSent, err)
		}
		return nil, fmt.Errorf("envsdk: %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGrantResponse+1))
	if err != nil {
		return nil, fmt.Errorf("envsdk: %s: read answer: %w", method, err)
	}
	if len(raw) > maxGrantResponse {
		return nil, fmt.Errorf("envsdk: %s: answer larger than %d bytes", method, maxGrantResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ce := &CallError{Method: method, Status: resp.StatusCode}
		var body struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &body) == nil {
			// Bounded as a failure receipt's message is: the body is the
			// answering server's, and an error goes to logs.
			ce.Code, ce.Message = envapi.Truncate(body.Code), envapi.Truncate(body.Message)
		}
		return nil, ce
	}
	return raw, nil
}

// call invokes a grant method, refusing locally when it is not granted.
func (c *caller) call(ctx context.Context, g *envapi.Grant, method string, input any) (json.RawMessage, error) {
	if !g.Allows(method) {
		return nil, fmt.Errorf("%w: %s", ErrNotGranted, method)
	}
	in, err := marshalInput(input)
	if err != nil {
		return nil, err
	}
	raw, err := c.post(ctx, g.URL, g.Token, method, envapi.ExecutionCall{Method: method, Input: in})
	if err != nil {
		return nil, err
	}
	return checkJSON(method, raw)
}

func marshalInput(input any) (json.RawMessage, error) {
	switch v := input.(type) {
	case json.RawMessage:
		if v == nil {
			return json.RawMessage("null"), nil
		}
		return v, nil
	case nil:
		return json.RawMessage("null"), nil
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("envsdk: encode input: %w", err)
	}
	return raw, nil
}
