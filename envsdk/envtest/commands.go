package envtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Commands builds the commands of one binding with increasing sequences,
// starting at 1; bindings made with For share the session's sequences, as
// Brain's journal does. Every command carries the binding reference and the
// current configuration (the last Setup's). When Brain is set, every
// command carries the binding's reporter grant and its own controller
// context grant, and every Execute a fresh tool grant for its sequence. It is safe for concurrent use.
type Commands struct {
	Session     string
	Environment string
	// Brain issues grants; nil sends commands without grants.
	Brain *Brain
	// BindingSequence is the binding's sequence; 0 means 1.
	BindingSequence uint64

	seq *counter

	mu            sync.Mutex
	configuration json.RawMessage
	reporter      *envapi.Grant
}

// counter is a session's sequence source.
type counter struct {
	mu   sync.Mutex
	last uint64
}

// NewCommands builds commands for environment in session.
func NewCommands(session, environment string) *Commands {
	return &Commands{Session: session, Environment: environment, seq: &counter{}}
}

// For builds commands for another environment of the same session that
// share this one's sequences and Brain.
func (c *Commands) For(environment string) *Commands {
	return &Commands{Session: c.Session, Environment: environment, Brain: c.Brain, seq: c.seq}
}

// Reserve allocates the next sequence without building a command; use it
// with At to build a command whose grant must name its sequence.
func (c *Commands) Reserve() uint64 {
	c.seq.mu.Lock()
	defer c.seq.mu.Unlock()
	c.seq.last++
	return c.seq.last
}

// Last is the last sequence allocated in the session.
func (c *Commands) Last() uint64 {
	c.seq.mu.Lock()
	defer c.seq.mu.Unlock()
	return c.seq.last
}

// At builds the command of req at sequence seq.
func (c *Commands) At(seq uint64, req envapi.Request) envapi.Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Type == envapi.RequestSetup {
		c.configuration = req.Configuration
	}
	bseq := c.BindingSequence
	if bseq == 0 {
		bseq = 1
	}
	var opContext *envapi.Grant
	if c.Brain != nil {
		if c.reporter == nil {
			g := c.Brain.ReporterGrant(c.Session, c.Environment, bseq)
			c.reporter = &g
		}
		g := c.Brain.ContextGrant(c.Session, c.Environment, seq)
		opContext = &g
	}
	return envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{
		SessionID:     c.Session,
		Environment:   c.Environment,
		Sequence:      seq,
		Request:       req,
		Binding:       &envapi.EnvironmentRef{Name: c.Environment, Sequence: bseq},
		Configuration: c.configuration,
		Context:       opContext,
		Reporter:      c.reporter,
	}}
}

// Next builds the command of req at the next sequence.
func (c *Commands) Next(req envapi.Request) envapi.Command { return c.At(c.Reserve(), req) }

// Reporter is the binding's reporter grant (nil before the first command
// or without Brain).
func (c *Commands) Reporter() *envapi.Grant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reporter
}

// Setup builds a setup with configuration (nil: {}).
func (c *Commands) Setup(configuration json.RawMessage) envapi.Command {
	if configuration == nil {
		configuration = json.RawMessage(`{}`)
	}
	return c.Next(envapi.Setup(configuration))
}

// Execute builds an execute; with Brain set it carries a fresh tool grant
// for its sequence (see Grant of the returned command's request).
// deadlineMs may be nil (no deadline).
func (c *Commands) Execute(implementation, input json.RawMessage, deadlineMs *int64) envapi.Command {
	var grant func(uint64) *envapi.Grant
	if c.Brain != nil {
		grant = func(seq uint64) *envapi.Grant { g := c.Brain.ToolGrant(c.Session, seq); return &g }
	}
	return c.ExecuteWith(implementation, input, deadlineMs, grant)
}

// ExecuteWith builds an execute whose callback is grant(seq); grant may be
// nil (no callback).
func (c *Commands) ExecuteWith(implementation, input json.RawMessage, deadlineMs *int64, grant func(seq uint64) *envapi.Grant) envapi.Command {
	seq := c.Reserve()
	var g *envapi.Grant
	if grant != nil {
		g = grant(seq)
	}
	return c.At(seq, envapi.Execute(implementation, input, deadlineMs, g))
}

// Call builds a call of a provider method.
func (c *Commands) Call(name string, input json.RawMessage) envapi.Command {
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	return c.Next(envapi.Call(name, input))
}

// Cancel builds a cancel of the execute at target.
func (c *Commands) Cancel(target uint64) envapi.Command { return c.Next(envapi.Cancel(target)) }

// Detach builds a detach.
func (c *Commands) Detach() envapi.Command { return c.Next(envapi.Detach()) }

// Teardown builds a teardown.
func (c *Commands) Teardown() envapi.Command { return c.Next(envapi.Teardown()) }

// Millis returns a pointer to ms, for deadline_ms.
func Millis(ms int64) *int64 { return &ms }

// Post sends cmd to baseURL+"/v1/operations" with the bearer token (none
// when token is empty) and returns the status, the body and, for a 200
// answer, the response decoded and checked as Brain's delivery takes it.
// cmd may be an envapi.Command, a []byte or json.RawMessage (sent as is)
// or any value to marshal. client nil means http.DefaultClient. err
// reports a transport failure, or wraps ErrInvalidResponse for a 200
// answer Brain records as an invalid receipt (status and body are then
// set): one larger than envapi.MaxResponseBytes, one that does not decode
// strictly, and, when cmd is a valid command, one envapi.CheckResponse
// refuses (another sequence, a receipt the request does not take, an
// identifier quoting token or a token the command carried). A status
// other than 200 is answered with its body and no error; Brain records
// it as a delivery failure.
//
// As Brain does, Post closes the controller context the command carried
// (on a fake Brain of this package) when the operation returns, whatever
// it answered; a cancel closes the context and revokes the callback of
// the execute it names before it is sent; and the callback of an execute
// with deadline_ms expires at that deadline, counted from when Post sends
// it. Later calls with those grants answer 401. A detach answered
// (accepted or failure) or a teardown accepted closes the binding's
// reporter: later reports answer 404 not_found, as Brain answers for a
// binding it recorded detached or deleted.
func Post(ctx context.Context, client *http.Client, baseURL, token string, cmd any) (status int, body []byte, resp *envapi.Response, err error) {
	var data []byte
	switch v := cmd.(type) {
	case []byte:
		data = v
	case json.RawMessage:
		data = v
	default:
		if data, err = json.Marshal(cmd); err != nil {
			return 0, nil, nil, fmt.Errorf("envtest: encode command: %w", err)
		}
	}
	// The grants of the operation close as Brain closes them: a cancel's
	// target (its context and callback) when it is sent, an execute's
	// callback at its deadline, the operation's own context when it
	// returns, and a released binding's reporter once it is answered.
	op, isOp := readOperation(data)
	if isOp {
		closeTarget(op)
		bindDeadline(op, time.Now())
		defer closeContext(op)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(baseURL, "/")+"/v1/operations", bytes.NewReader(data))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("envtest: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("envtest: post operation: %w", err)
	}
	defer res.Body.Close()
	// One byte past the bound tells a larger answer apart.
	body, err = io.ReadAll(io.LimitReader(res.Body, envapi.MaxResponseBytes+1))
	if err != nil {
		return res.StatusCode, body, nil, fmt.Errorf("envtest: read response: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, body, nil, nil
	}
	if len(body) > envapi.MaxResponseBytes {
		return res.StatusCode, body, nil, fmt.Errorf("envtest: response larger than %d bytes: %w", envapi.MaxResponseBytes, ErrInvalidResponse)
	}
	r, err := envapi.DecodeResponse(body)
	if err != nil {
		return res.StatusCode, body, nil, fmt.Errorf("envtest: response: %w: %w", err, ErrInvalidResponse)
	}
	if sent, err := envapi.DecodeCommand(data); err == nil {
		if err := envapi.CheckResponse(sent.Operation, r, append(sent.Operation.Tokens(), token)...); err != nil {
			return res.StatusCode, body, nil, fmt.Errorf("envtest: response: %w: %w", err, ErrInvalidResponse)
		}
	}
	if isOp {
		closeBinding(op, &r)
	}
	return res.StatusCode, body, &r, nil
}

// ErrInvalidResponse is wrapped by the error of Post when the provider
// answered 200 with an answer Brain records as an invalid receipt.
var ErrInvalidResponse = errors.New("envtest: invalid response")
