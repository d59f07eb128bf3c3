package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// ErrDisplaced reports that another connection of the same host replaced
// this client's; the host does not reconnect.
var ErrDisplaced = errors.New("client: host connection displaced by another connection")

// ErrSuspended reports that the host stopped serving because Brain
// suspended its commands connection at its request (Host.Suspend);
// Host.Resume serves it again.
var ErrSuspended = errors.New("client: host suspended")

// ErrCancelTool is the cause of a handler's ctx when Brain cancels the
// call (cancel_tool, as on an interrupt).
var ErrCancelTool = errors.New("client: tool call cancelled")

// ErrHostConnectionLost is the cause of a handler's ctx when the
// connection that carried its call ended: Brain records the call's
// outcome as unknown and takes no further update of it.
var ErrHostConnectionLost = errors.New("client: host connection lost")

// Handler serves one tool on a host. ctx ends at the call's deadline
// (context.DeadlineExceeded), when Brain cancels the call (ErrCancelTool),
// when the connection that carried it ends or when the client closes. The
// returned outcome finishes the call; a returned error finishes it as an
// error with code tool_error, and an outcome Brain refuses (malformed, or
// larger than a request may be) as an error with code invalid_output that
// quotes the refusal. Nothing is posted once ctx has ended, as Brain has
// then closed the call already, and a call that arrives after its
// deadline runs no handler.
type Handler func(ctx context.Context, call *ToolCall) (api.Outcome, error)

// OK answers an ok outcome with value v (encoded as JSON).
func OK(v any) api.Outcome {
	b, err := json.Marshal(v)
	if err != nil {
		return Fail("invalid_output", "encoding the value: "+err.Error())
	}
	return api.Outcome{Status: api.OutcomeOK, Value: b}
}

// Fail answers an error outcome.
func Fail(code, message string) api.Outcome {
	return api.Outcome{Status: api.OutcomeFailed, Error: &api.OutcomeError{Code: code, Message: message}}
}

// ToolCall is one invocation of a host tool, with the services of the
// call.
type ToolCall struct {
	h           *Host
	SessionID   string
	Sequence    uint64 // its tool_call_started
	Environment string
	Template    string
	Name        string
	Input       json.RawMessage
	// Deadline is when the call times out (zero: none).
	Deadline time.Time
}

// Emit commits an extension event of the call and answers its sequence.
//
// Emit, Result and Returned are sent under an idempotency key (the one
// given with IdempotencyKey, or one the client chooses). One whose answer
// did not arrive (a lost connection, a proxy's answer in Brain's stead:
// a 408 or any 5xx without an ApiError) is sent
// again with its key, and Brain answers the record the first made rather
// than making another. When the outcome stays unknown it fails with an
// *UncertainError carrying the key: the same call sent again with
// IdempotencyKey(Key) is answered with the first's sequence if it was
// recorded, and recorded now if it was not. Brain keeps a host's latest
// answers in memory, also after the call closed, but not across its
// restart.
func (tc *ToolCall) Emit(ctx context.Context, eventType string, data any, opts ...CallOption) (uint64, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("client: encode event: %w", err)
	}
	return tc.h.postKeyed(ctx, "/events", api.HostEvent{SessionID: tc.SessionID, Sequence: tc.Sequence, EventType: eventType, Data: b}, opts)
}

// Result commits a result of the call (tool_result_emitted); the call
// stays open. It is sent as Emit is.
func (tc *ToolCall) Result(ctx context.Context, o api.Outcome, opts ...CallOption) (uint64, error) {
	return tc.update(ctx, api.UpdateResult, &o, opts...)
}

// Returned ends the call's synchronous phase (the loop goes on) while the
// handler keeps running; its return finishes the call later. It is sent
// as Emit is.
func (tc *ToolCall) Returned(ctx context.Context, o *api.Outcome, opts ...CallOption) (uint64, error) {
	return tc.update(ctx, api.UpdateReturned, o, opts...)
}

func (tc *ToolCall) update(ctx context.Context, typ string, o *api.Outcome, opts ...CallOption) (uint64, error) {
	return tc.h.postKeyed(ctx, "/results", api.HostResult{SessionID: tc.SessionID, Sequence: tc.Sequence, Update: api.ToolExecutionUpdate{Type: typ, Outcome: o}}, opts)
}

// Model calls the session's model with explicit messages.
func (tc *ToolCall) Model(ctx context.Context, req api.ModelRequest) (api.ModelResult, error) {
	r, err := tc.h.post(ctx, "/model", api.HostModelCall{SessionID: tc.SessionID, Sequence: tc.Sequence, Request: req}, answers[api.ModelResult]())
	if err != nil {
		return api.ModelResult{}, err
	}
	return decode[api.ModelResult](r)
}

// Call calls a service method granted to the call (such as environments
// or telemetry) and answers its raw result. A method that records and
// answers its sequence (emit, result, returned, finish, set_transcript,
// kv_put, kv_delete) is sent as Emit is, under an idempotency key; any
// other is sent once, without a key. Brain takes a key only with a method
// that records: any other given an IdempotencyKey is refused, carried out
// never, with Brain's invalid_request (the key is not dropped, which
// would carry the call out again when it is sent again with its key).
func (tc *ToolCall) Call(ctx context.Context, method string, input json.RawMessage, opts ...CallOption) (json.RawMessage, error) {
	in := api.HostServiceCall{SessionID: tc.SessionID, Sequence: tc.Sequence, Call: api.ServiceCall{Method: method, Input: input}}
	if !slices.Contains(envapi.RecordingMethods(), method) && !keyed(opts) {
		r, err := tc.h.post(ctx, "/call", in, answersJSON)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(r.body), nil
	}
	r, err := tc.h.c.do(ctx, http.MethodPost, tc.h.path("/call"), in, true, append(tc.h.bearer(opts), answersJSON))
	if err != nil {
		return nil, err
	}
	return json.RawMessage(r.body), nil
}

// Host serves tools from this process: Brain sends their calls over one
// commands connection that the client keeps open (reconnecting with
// backoff) until it closes.
type Host struct {
	c     *Client
	ID    string
	token string

	mu       sync.Mutex
	handlers map[string]Handler
	handled  chan struct{} // closed and replaced by each Handle
	running  map[callKey]*running
	conn     string // the current connection's id
	err      error  // why the host stopped
	// connectErr is why the latest attempt to open a connection failed
	// (nil once one opened).
	connectErr error
	up         chan struct{}
	upOnce     *sync.Once
	stopped    chan struct{}
	// suspending is open while a Suspend is being answered: a connection
	// that ends meanwhile is not reopened before the answer is known.
	suspending chan struct{}
	suspended  bool
}

// callKey names a call: sequences are per session.
type callKey struct {
	session string
	seq     uint64
}

type running struct {
	cancel context.CancelCauseFunc
}

// Host registers this client's host on first use and answers it; later
// calls answer the same Host (a call made while another registers waits
// for it, until its own ctx ends). The host keeps its connection until
// Close, whatever happens to the sessions that use it.
func (c *Client) Host(ctx context.Context) (*Host, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	// One registration at a time: a call waiting for another's returns
	// when its ctx ends.
	select {
	case c.hostSem <- struct{}{}:
	default:
		select {
		case c.hostSem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.life.Done():
			return nil, ErrClosed
		}
	}
	defer func() { <-c.hostSem }()
	if c.host != nil {
		return c.host, nil
	}
	r, err := c.do(ctx, http.MethodPost, "/v1/hosts", nil, false, []CallOption{answers[api.HostRegistration]()})
	if err != nil {
		return nil, err
	}
	reg, err := decode[api.HostRegistration](r)
	if err == nil && (reg.HostID == "" || reg.Token == "") {
		err = fmt.Errorf("client: malformed answer: host registration without an id or token")
	}
	if err != nil {
		return nil, err
	}
	return c.startHostLocked(reg), nil
}

// ErrHostRegistering is answered by ResumeHost while a Host call of the
// same client registers a host.
var ErrHostRegistering = errors.New("client: a host registration is under way")

// ResumeHost serves an existing registration (as a host process that
// restarts does, with the id and token it saved) instead of registering
// a new host. It sends nothing and does not block: it fails when the
// client already has a host, with ErrHostRegistering while a Host call
// registers one, and for a registration without a token or whose id
// cannot be one path segment ("", "." or ".."); any other id is escaped
// into the host's routes, so that it names no other route.
func (c *Client) ResumeHost(reg api.HostRegistration) (*Host, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	switch {
	case reg.HostID == "" || reg.HostID == "." || reg.HostID == "..":
		return nil, fmt.Errorf("client: host id %q is not a host id", reg.HostID)
	case reg.Token == "":
		return nil, fmt.Errorf("client: host %s: the registration has no token", reg.HostID)
	}
	// The token is held by a Host call for as long as its registration
	// is answered, and by a ResumeHost only while it sets host.
	select {
	case c.hostSem <- struct{}{}:
	default:
		return nil, ErrHostRegistering
	}
	defer func() { <-c.hostSem }()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.host != nil {
		return nil, fmt.Errorf("client: already serving host %s", c.host.ID)
	}
	return c.startHostLocked(reg), nil
}

func (c *Client) startHostLocked(reg api.HostRegistration) *Host {
	h := &Host{c: c, ID: reg.HostID, token: reg.Token, handlers: map[string]Handler{}, handled: make(chan struct{}), running: map[callKey]*running{},
		up: make(chan struct{}), upOnce: new(sync.Once), stopped: make(chan struct{})}
	c.host = h
	go h.serve(h.up, h.upOnce, h.stopped)
	return h
}

// Registration answers the host's id and token, to be saved for
// ResumeHost.
func (h *Host) Registration() api.HostRegistration {
	return api.HostRegistration{HostID: h.ID, Token: h.token}
}

// Handle serves tool name with fn; it replaces an earlier handler of that
// name. Host and ResumeHost connect at once, so a call may arrive before
// the program gave any handler: such a call waits for a Handle of its
// tool up to HandlerGrace. A call for a tool without a handler fails with
// code unknown_tool (at once once the host has handlers).
func (h *Host) Handle(name string, fn Handler) {
	h.mu.Lock()
	h.handlers[name] = fn
	close(h.handled)
	h.handled = make(chan struct{})
	h.mu.Unlock()
}

// HandlerGrace is how long a call that arrives before the host has any
// handler waits for Handle to give its tool one.
const HandlerGrace = 5 * time.Second

// awaitHandler answers the handler of tool name once Handle gives one.
// It waits only while the host has no handler at all, and answers nil
// when HandlerGrace passes or ctx ends first.
func (h *Host) awaitHandler(ctx context.Context, name string) Handler {
	t := time.NewTimer(HandlerGrace)
	defer t.Stop()
	for waited := false; ; waited = true {
		h.mu.Lock()
		fn, handled, some := h.handlers[name], h.handled, len(h.handlers) > 0
		h.mu.Unlock()
		if fn != nil || (some && !waited) {
			return fn
		}
		select {
		case <-handled:
		case <-t.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Environment answers the declaration of an environment served by this
// host.
func (h *Host) Environment(name string) api.Environment {
	return api.Environment{Name: name, Driver: api.DriverHost, HostID: h.ID}
}

// Connected waits until the commands connection is open. When ctx ends
// first while attempts to connect fail, its error also carries the
// latest attempt's (errors.As finds the *api.ApiError of an answer).
func (h *Host) Connected(ctx context.Context) error {
	if h.c.closed.Load() {
		return ErrClosed
	}
	h.mu.Lock()
	up, stopped := h.up, h.stopped
	h.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-stopped:
		return h.Err()
	case <-ctx.Done():
		h.mu.Lock()
		last := h.connectErr
		h.mu.Unlock()
		if last != nil {
			return fmt.Errorf("client: host %s is not connected, its last attempt failed: %w: %w", h.ID, last, ctx.Err())
		}
		return ctx.Err()
	}
}

// Suspend asks Brain to close the host's commands connection if it
// carries no command (no call outstanding, none queued), as a host that
// scales to zero does, and reports whether it did. A suspended host stops
// serving (Err answers ErrSuspended): Brain fails calls for it with
// host_not_connected, retryable, until Resume (or ResumeHost in another
// process) connects it again. When Brain answers false the host goes on
// serving on the same connection.
func (h *Host) Suspend(ctx context.Context) (bool, error) {
	h.mu.Lock()
	if h.suspending != nil || h.suspended {
		h.mu.Unlock()
		return false, fmt.Errorf("client: host %s: a suspend is already under way", h.ID)
	}
	select {
	case <-h.stopped:
		err := h.err
		h.mu.Unlock()
		return false, fmt.Errorf("client: host %s is not serving: %w", h.ID, err)
	default:
	}
	conn, stopped := h.conn, h.stopped
	if conn == "" {
		h.mu.Unlock()
		return false, fmt.Errorf("client: host %s has no commands connection yet", h.ID)
	}
	wait := make(chan struct{})
	h.suspending = wait
	h.mu.Unlock()

	suspended := false
	r, err := h.post(ctx, "/suspend", api.HostSuspend{Connection: conn}, answers[api.HostSuspended]("suspended"))
	if err == nil {
		var a api.HostSuspended
		if a, err = decode[api.HostSuspended](r); err == nil {
			suspended = a.Suspended
		}
	}
	h.mu.Lock()
	h.suspended = suspended
	h.suspending = nil
	h.mu.Unlock()
	close(wait)
	if suspended {
		// The serve loop sees the connection end and stops.
		select {
		case <-stopped:
		case <-ctx.Done():
		}
	}
	return suspended, err
}

// Resume serves a suspended host again: it opens a new commands
// connection (Connected waits for it), with the same handlers. It fails
// unless the host stopped because it was suspended.
func (h *Host) Resume() error {
	if h.c.closed.Load() {
		return ErrClosed
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.suspended {
		return fmt.Errorf("client: host %s is not suspended", h.ID)
	}
	select {
	case <-h.stopped:
	default:
		return fmt.Errorf("client: host %s is still stopping", h.ID)
	}
	h.suspended, h.err, h.conn, h.connectErr = false, nil, "", nil
	h.up, h.upOnce, h.stopped = make(chan struct{}), new(sync.Once), make(chan struct{})
	go h.serve(h.up, h.upOnce, h.stopped)
	return nil
}

// Err answers why the host stopped serving (nil while it serves).
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// serve keeps the commands connection open until the client closes or
// the host is suspended; up closes when a connection opens, stopped when
// serve returns.
func (h *Host) serve(up chan struct{}, upOnce *sync.Once, stopped chan struct{}) {
	defer close(stopped)
	backoff := 50 * time.Millisecond
	for {
		progressed, err := h.connectOnce(up, upOnce)
		if !progressed {
			h.mu.Lock()
			h.connectErr = err
			h.mu.Unlock()
		}
		if h.parked() {
			h.mu.Lock()
			h.err = ErrSuspended
			h.mu.Unlock()
			return
		}
		if h.c.closed.Load() || errors.Is(err, ErrDisplaced) || errors.Is(err, ErrNotEventStream) {
			if err == nil || !errors.Is(err, ErrDisplaced) && !errors.Is(err, ErrNotEventStream) {
				err = ErrClosed
			}
			h.mu.Lock()
			h.err = err
			h.mu.Unlock()
			return
		}
		var ae *api.ApiError
		if errors.As(err, &ae) && ae.Code == api.CodeUnauthorized {
			h.mu.Lock()
			h.err = fmt.Errorf("client: host %s is no longer registered: %w", h.ID, err)
			h.mu.Unlock()
			return
		}
		if progressed {
			backoff = 50 * time.Millisecond
		}
		select {
		case <-time.After(backoff):
		case <-h.c.life.Done():
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// parked waits for the answer of a suspend under way and reports whether
// it suspended the host.
func (h *Host) parked() bool {
	h.mu.Lock()
	wait := h.suspending
	h.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-h.c.life.Done():
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.suspended
}

// connectOnce reads one commands connection until it ends.
func (h *Host) connectOnce(up chan struct{}, upOnce *sync.Once) (bool, error) {
	// The connection has a context of its own, cancelled when it goes
	// silent.
	ctx, cancel := context.WithCancelCause(h.c.life)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.c.base+h.path("/commands"), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token)
	// A request not answered within the heartbeat intervals a connection
	// may stay silent is given up as a silent connection is.
	silent := h.c.silenced(cancel)
	stopWaiting := h.c.awaitAnswer(silent)
	resp, err := h.c.hc.Do(req)
	stopWaiting()
	if err != nil {
		if errors.Is(context.Cause(ctx), errSilent) && h.c.life.Err() == nil {
			return false, fmt.Errorf("client: host %s commands: no answer: %w", h.ID, errSilent)
		}
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, apiError(resp.StatusCode, redact(b, h.token))
	}
	if err := checkEventStream(resp.Header); err != nil {
		return false, fmt.Errorf("client: host %s commands: %w", h.ID, err)
	}
	connID := resp.Header.Get("Brain-Host-Connection")
	h.mu.Lock()
	h.conn, h.connectErr = connID, nil
	h.mu.Unlock()
	upOnce.Do(func() { close(up) })
	defer h.lost(connID)
	body, watch := h.c.watchHeartbeat(ctx, silent, resp.Header, resp.Body)
	defer watch.stop()
	maxLine := h.c.lineBound()
	return true, scanSSECut(body, maxLine, func(_, event string, data []byte, cut bool) error {
		if cut && event == "command" {
			// Brain sends a command once: the connection goes on, and
			// the call fails rather than being lost with it. A command
			// whose start names no call is passed over.
			if cmd, ok := commandHead(data); ok {
				refused := Fail(envapi.CodeInvalidInput, fmt.Sprintf("the command of tool call %d is longer than the host reads (%d bytes): its input was not read", cmd.Sequence, maxLine))
				h.dispatch(connID, cmd, &refused)
			}
			return nil
		}
		cmd, ok, err := commandFrame(event, data)
		switch {
		case ok:
			h.dispatch(connID, cmd, nil)
		case event == "command":
			// A command that does not decode fails its call, when its
			// start names one, rather than leaving Brain waiting for an
			// outcome until the call's deadline.
			if head, named := commandHead(data); named {
				refused := Fail(envapi.CodeInvalidInput, fmt.Sprintf("the command of tool call %d does not decode: %v", head.Sequence, json.Unmarshal(data, new(api.HostCommand))))
				h.dispatch(connID, head, &refused)
			}
		}
		return err
	})
}

// commandHead decodes the start of a command's data, cut short: Brain
// writes the call's session, sequence, environment, template, deadline
// and the operation's type and name before the operation's input. It
// reports whether the start names an invoke_tool call.
func commandHead(data []byte) (cmd api.HostCommand, ok bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	named := func() bool {
		return cmd.SessionID != "" && cmd.Sequence != 0 && cmd.Operation.Type == api.HostInvokeTool && cmd.Operation.Name != ""
	}
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return cmd, false
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			break
		}
		var v any
		switch t {
		case "session_id":
			v = &cmd.SessionID
		case "sequence":
			v = &cmd.Sequence
		case "environment":
			v = &cmd.Environment
		case "template":
			v = &cmd.Template
		case "deadline_at_ms":
			v = &cmd.DeadlineAtMs
		case "operation":
			operationHead(d, &cmd.Operation)
			return cmd, named()
		default:
			v = new(json.RawMessage)
		}
		if d.Decode(v) != nil {
			break
		}
	}
	return cmd, named()
}

// operationHead decodes the start of a command's operation up to its
// input.
func operationHead(d *json.Decoder, op *api.HostOperation) {
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return
		}
		var v *string
		switch t {
		case "type":
			v = &op.Type
		case "name":
			v = &op.Name
		default:
			return
		}
		if d.Decode(v) != nil {
			return
		}
	}
}

// commandFrame decodes one frame of the commands stream: ok with the
// command of a command frame whose data decodes, ErrDisplaced for a
// displaced frame. Any other frame, and a command that does not decode,
// answers neither (the caller fails the call such a command names).
func commandFrame(event string, data []byte) (cmd api.HostCommand, ok bool, err error) {
	switch event {
	case "command":
		if err := json.Unmarshal(data, &cmd); err == nil {
			return cmd, true, nil
		}
	case "displaced":
		return api.HostCommand{}, false, ErrDisplaced
	}
	return api.HostCommand{}, false, nil
}

// lost cancels the handlers of calls a connection carried.
func (h *Host) lost(connID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, r := range h.running {
		r.cancel(ErrHostConnectionLost)
		delete(h.running, k)
	}
}

// dispatch serves a command; refused, when set, is the outcome of an
// invoke_tool whose handler does not run.
func (h *Host) dispatch(connID string, cmd api.HostCommand, refused *api.Outcome) {
	switch cmd.Operation.Type {
	case api.HostCancelTool:
		h.mu.Lock()
		if r := h.running[callKey{cmd.SessionID, cmd.Operation.TargetSequence}]; r != nil {
			r.cancel(ErrCancelTool)
		}
		h.mu.Unlock()
	case api.HostInvokeTool:
		h.mu.Lock()
		fn := h.handlers[cmd.Operation.Name]
		ctx, cancel := context.WithCancelCause(h.c.life)
		stop := func() {}
		tc := &ToolCall{h: h, SessionID: cmd.SessionID, Sequence: cmd.Sequence, Environment: cmd.Environment,
			Template: cmd.Template, Name: cmd.Operation.Name, Input: cmd.Operation.Input}
		if cmd.DeadlineAtMs != nil {
			tc.Deadline = time.UnixMilli(*cmd.DeadlineAtMs)
			var dcancel context.CancelFunc
			ctx, dcancel = context.WithDeadline(ctx, tc.Deadline)
			stop = dcancel
		}
		h.running[callKey{cmd.SessionID, cmd.Sequence}] = &running{cancel: cancel}
		h.mu.Unlock()
		go h.run(ctx, func() { stop(); cancel(nil) }, fn, tc, refused)
	}
}

// run serves one invoke_tool command and finishes its call with the
// handler's outcome, or with refused when that is set.
func (h *Host) run(ctx context.Context, done func(), fn Handler, tc *ToolCall, refused *api.Outcome) {
	defer done()
	defer func() {
		h.mu.Lock()
		delete(h.running, callKey{tc.SessionID, tc.Sequence})
		h.mu.Unlock()
	}()
	if ctx.Err() != nil {
		// The call arrived after its deadline: Brain closed it as timed
		// out already, and its tool runs nothing.
		return
	}
	var out api.Outcome
	ok := true
	if refused != nil {
		out = *refused
	} else if out, ok = h.handle(ctx, fn, tc); !ok {
		return // Brain closed the call (deadline, cancel) or the host stopped
	}
	// The finish outlives a cancellation that arrives meanwhile; only
	// closing the client, or the end of the time finish has, stops it.
	fctx, stop := context.WithDeadline(context.WithoutCancel(ctx), finishUntil(tc))
	defer stop()
	err := h.finish(fctx, tc, &out)
	var ae *api.ApiError
	if errors.As(err, &ae) && ae.Code == api.CodeInvalidRequest {
		// Brain refused the outcome itself (malformed, or larger than a
		// request may be): the call fails now rather than staying open
		// until its deadline.
		failed := Fail("invalid_output", "Brain refused the handler's outcome: "+clip(ae.Message, maxRefusalBytes))
		_, _ = tc.update(fctx, api.UpdateFinish, &failed)
	}
}

// handle answers the outcome of tc's handler fn (nil: the call waits for
// one up to HandlerGrace), or ok false when ctx ended first: Brain closed
// the call (deadline, cancel) or the host stopped.
func (h *Host) handle(ctx context.Context, fn Handler, tc *ToolCall) (out api.Outcome, ok bool) {
	if fn == nil {
		if fn = h.awaitHandler(ctx, tc.Name); ctx.Err() != nil {
			return out, false
		}
	}
	if fn == nil {
		return Fail("unknown_tool", "this host serves no tool "+tc.Name), true
	}
	out, err := h.call(ctx, fn, tc)
	if ctx.Err() != nil {
		return out, false
	}
	if err != nil {
		out = Fail("tool_error", err.Error())
	}
	return out, true
}

// finishGiveUp bounds how long a finish Brain did not answer is posted
// again when the call has no deadline.
const finishGiveUp = 30 * time.Second

// finishUntil answers when the finish of tc is given up: at the call's
// deadline, or finishGiveUp from now when it has none.
func finishUntil(tc *ToolCall) time.Time {
	if tc.Deadline.IsZero() {
		return time.Now().Add(finishGiveUp)
	}
	return tc.Deadline
}

// finish posts the call's outcome under ctx, which ends at finishUntil.
// A finish Brain did not answer (a lost connection, a proxy's answer in
// its stead, a drain's 503) is posted again with growing pauses until Brain
// answers it, the call's deadline (or finishGiveUp) passes or the client
// closes: the call would otherwise stay open until its deadline. An
// attempt whose answer does not come ends then too. Posting it again is
// safe: every attempt carries the same idempotency key, so a finish that
// did land is answered with its record, and Brain refuses any other
// finish of a closed call.
func (h *Host) finish(ctx context.Context, tc *ToolCall, out *api.Outcome) error {
	until, _ := ctx.Deadline()
	key := IdempotencyKey(newKey())
	pause := 50 * time.Millisecond
	for {
		_, err := tc.update(ctx, api.UpdateFinish, out, key)
		var ae *api.ApiError
		if err == nil || errors.Is(err, ErrClosed) || (errors.As(err, &ae) && !ae.Retryable) || time.Now().Add(pause).After(until) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		case <-h.c.life.Done():
			t.Stop()
			return err
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// maxRefusalBytes bounds the part of Brain's answer quoted when it
// refused a handler's outcome.
const maxRefusalBytes = 1024

// clip shortens s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

func (h *Host) call(ctx context.Context, fn Handler, tc *ToolCall) (out api.Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return fn(ctx, tc)
}

// path is the host's route with suffix; the id is escaped, so that an id
// holding "/", "?" or ".." names no other route.
func (h *Host) path(suffix string) string {
	return "/v1/hosts/" + segment(h.ID) + suffix
}

// post sends a JSON body to a host route with the host's token, once
// and without a key (a model call, a service call that records nothing,
// a suspend): its 2xx answer is one check takes, else it is not Brain's.
func (h *Host) post(ctx context.Context, suffix string, in any, check CallOption) (*response, error) {
	return h.c.do(ctx, http.MethodPost, h.path(suffix), in, false, h.bearer([]CallOption{check}))
}

// postKeyed sends a JSON body to a host route with the host's token under
// an idempotency key, as the client's keyed writes are sent, and answers
// the sequence Brain answered.
func (h *Host) postKeyed(ctx context.Context, suffix string, in any, opts []CallOption) (uint64, error) {
	r, err := h.c.do(ctx, http.MethodPost, h.path(suffix), in, true, append(h.bearer(opts), answers[api.SequenceAnswer]()))
	if err != nil {
		return 0, err
	}
	a, err := decode[api.SequenceAnswer](r)
	return a.Sequence, err
}

// bearer answers opts with the host's token authorizing the request.
func (h *Host) bearer(opts []CallOption) []CallOption {
	return append(opts[:len(opts):len(opts)], func(c *call) { c.bearer = h.token })
}
