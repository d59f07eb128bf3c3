package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/brain/internal/telemetry"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Services is the one service table of agentloop and tool executions. The
// HTTP callback endpoint and the Wasm host expose this same table. Methods
// an execution is not granted answer ErrNotGranted: a loop is granted
// emit, telemetry, events, model, dispatch, environments, set_transcript,
// kv_read, kv_put, kv_delete; a tool emit, result, returned, finish, model,
// environments, telemetry.
type Services interface {
	agentloop.Services
	// Result commits a tool result (tool_result_emitted).
	Result(ctx context.Context, outcome api.Outcome) (uint64, error)
	// Returned ends a tool's synchronous phase (tool_call_returned); the
	// tool stays open until Finish.
	Returned(ctx context.Context, outcome *api.Outcome) (uint64, error)
	// Finish closes a tool (tool_call_ended), ordered after its earlier
	// emissions; later emissions are refused. A nil outcome finishes with
	// the last result, or ok null. A finish that cannot be recorded
	// answers the journal's error and closes the call all the same: every
	// later call of the execution answers ErrWrongState (see
	// unrecordedCalls).
	Finish(ctx context.Context, outcome *api.Outcome) (uint64, error)
	// Call dispatches by method name with JSON input and output.
	Call(ctx context.Context, method string, input json.RawMessage) (json.RawMessage, error)
	// Methods lists the granted methods.
	Methods() []string
}

// execution is one open agentloop activation or tool call.
type execution struct {
	s    *sess
	seq  uint64 // activation_started or tool_call_started
	loop bool
	act  *activation // the activation (loop) or the one that started the tool
	tool *toolCall
	// ctrl is the binding of an environment operation's controller
	// context (nil for loops and tools).
	ctrl   *api.EnvironmentRef
	budget *budget
	ctx    context.Context
	origin *api.EventOrigin

	// emitMu orders a tool's emissions before its finish.
	emitMu sync.Mutex
	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed with closed
	// grant, set for a tool, is closed when the invocation token of its
	// execute's callback is to be revoked
	// (Operation.CallbackDone): with done, but for a tool whose finish
	// could not be recorded, whose token answers the calls sent again
	// until the engine forgets the call (unrecordedCalls).
	grant        chan struct{}
	grantRevoked bool
	// unrecorded answers every call after a finish that could not be
	// recorded (unrecordedLocked).
	unrecorded error
	// grants bound the execution's environment control requests.
	grants []api.EnvironmentGrant
}

var _ Services = (*execution)(nil)

// Execution answers the open execution whose started record is seq (an
// activation_started or tool_call_started), for the HTTP callback endpoint
// and the Wasm host. A closed or unknown execution answers
// ErrExecutionClosed; a tool call whose finish could not be recorded
// answers its execution, whose calls are answered the conflict that says
// so (unrecordedCalls).
func (e *Engine) Execution(id string, seq uint64) (Services, error) {
	e.mu.Lock()
	s := e.live[id]
	e.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		x := s.execs[seq]
		s.mu.Unlock()
		if x != nil {
			return x, nil
		}
	}
	if x := e.unrecordedExecution(id, seq); x != nil {
		return x, nil
	}
	return nil, fmt.Errorf("session %s execution %d: %w", id, seq, ErrExecutionClosed)
}

func (x *execution) close() {
	x.mu.Lock()
	if !x.closed {
		x.closed = true
		if x.done != nil {
			close(x.done)
		}
	}
	if x.unrecorded == nil {
		x.revokeLocked()
	}
	x.mu.Unlock()
}

// revoke revokes the execution's invocation token (closes grant).
func (x *execution) revoke() {
	x.mu.Lock()
	x.revokeLocked()
	x.mu.Unlock()
}

func (x *execution) revokeLocked() {
	if x.grant != nil && !x.grantRevoked {
		x.grantRevoked = true
		close(x.grant)
	}
}

// Done is closed when the execution completes or is cancelled: from then
// on its authority is revoked. Transports use it to forget the callback
// credentials they minted for it.
func (x *execution) Done() <-chan struct{} { return x.done }

// Closer is implemented by the Services that Engine.Execution answers.
type Closer interface {
	Done() <-chan struct{}
}

// Methods lists the granted methods.
func (x *execution) Methods() []string {
	if x.ctrl != nil {
		return envapi.ContextMethods()
	}
	if x.loop {
		return envapi.AgentloopMethods()
	}
	return envapi.ToolMethods()
}

// check admits a call of method: a tool call whose finish could not be
// recorded answers every method alike, however it is reached
// (unrecordedAnswer); otherwise the method must be granted and the
// execution live.
func (x *execution) check(ctx context.Context, method string) error {
	if err := x.unrecordedAnswer(ctx); err != nil {
		return err
	}
	granted := false
	for _, m := range x.Methods() {
		if m == method {
			granted = true
		}
	}
	if !granted {
		return fmt.Errorf("%w: %s", ErrNotGranted, method)
	}
	return x.liveLocked(method)
}

// stopped refuses a call of an execution whose context ended: a loop's
// answers the cause; a tool's is being closed by its deadline or a
// cancel (toolStopped), and cancellation makes the calls that follow it
// fail as those of a closed execution do.
func (x *execution) stopped(method string) error {
	cause := context.Cause(x.ctx)
	switch {
	case cause == nil:
		return nil
	case x.loop:
		return fmt.Errorf("%s: %w", method, cause)
	case x.tool != nil:
		return fmt.Errorf("%s: %w: the tool was stopped: %v", method, ErrExecutionClosed, cause)
	}
	return nil
}

// callCtx merges the caller's context with the execution's.
func (x *execution) callCtx(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancelCause(x.ctx)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return c, func() { stop(); cancel(nil) }
}

// Model calls the session's model behind a model_call fence. A request
// without messages (nil: absent or null in JSON; an empty list is a
// request) is refused as invalid before anything is recorded or sent,
// whatever transport delivered it.
func (x *execution) Model(ctx context.Context, req api.ModelRequest) (api.ModelResult, error) {
	if err := x.check(ctx, envapi.MethodModel); err != nil {
		return api.ModelResult{}, err
	}
	if req.Messages == nil {
		return api.ModelResult{}, fmt.Errorf("%w: %s input: messages are required", ErrInvalid, envapi.MethodModel)
	}
	// JSON never decodes to an empty raw value; an empty one is left out.
	if len(req.ResponseFormat) == 0 {
		req.ResponseFormat = nil
	}
	if len(req.Options) == 0 {
		req.Options = nil
	}
	over := overridesOf(req)
	s := x.s
	s.mu.Lock()
	if err := x.liveLocked(envapi.MethodModel); err != nil {
		s.mu.Unlock()
		return api.ModelResult{}, err
	}
	conf := s.st.Config
	if x.loop {
		if req.System == nil {
			sys := conf.System
			req.System = &sys
		}
		if req.Tools == nil {
			for _, t := range conf.Tools {
				req.Tools = append(req.Tools, api.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
			}
		}
		if req.ResponseFormat == nil {
			req.ResponseFormat = conf.ResponseFormat
		}
	}
	for _, offered := range req.Tools {
		if !hasTool(conf.Tools, offered.Name) {
			s.mu.Unlock()
			return api.ModelResult{}, fmt.Errorf("%w: tool %q is not a session tool", ErrInvalid, offered.Name)
		}
	}
	client, openErr := s.modelLocked(ctx)
	// The request is checked and encoded once, outside the session's lock
	// (the configuration it took defaults from never changes): a request
	// the session's dialect cannot carry (an option it does not take, say)
	// is refused before anything is committed or sent, and the bytes
	// checked are the bytes sent. A client that prepares nothing ahead
	// (the scripted model) is handed the request as it is, under the lock.
	// A client that cannot be opened fails the call after its
	// model_call_started.
	var call model.Prepared
	if openErr == nil {
		_, builds := client.(model.Preparer)
		if builds {
			s.mu.Unlock()
		}
		var err error
		call, err = model.Prepare(client, req)
		if builds {
			s.mu.Lock()
		}
		if err != nil {
			s.mu.Unlock()
			return api.ModelResult{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if builds {
			if err := x.liveLocked(envapi.MethodModel); err != nil {
				s.mu.Unlock()
				return api.ModelResult{}, err
			}
		}
	}
	started := modelCallStarted{Messages: len(req.Messages), Tools: len(req.Tools), Request: over}
	started.Context.ThroughSequence = s.st.last()
	if x.loop {
		started.Context.Delta = s.st.deltaByRef(s.st.Transcript, req.Messages)
	} else {
		started.Context.Delta = s.st.deltaByRef(nil, req.Messages)
		started.Tool = x.seq
	}
	// Only a call that is sent counts in the turn's budget: one refused
	// before its model_call_started (an invalid request, a closed
	// execution, a failed commit) is not a model call.
	max := int64(s.e.cfg.Limits.MaxModelCalls)
	if max > 0 && x.budget.modelCalls.Add(1) > max {
		x.budget.modelCalls.Add(-1)
		s.mu.Unlock()
		return api.ModelResult{}, fmt.Errorf("%w: %d calls per turn", ErrModelCallLimit, max)
	}
	seq, err := s.commitLocked(rec(api.KindModelCallStarted, started))
	if err != nil {
		if max > 0 {
			x.budget.modelCalls.Add(-1)
		}
		s.mu.Unlock()
		return api.ModelResult{}, err
	}
	span := s.e.startSpan(x.ctx, "brain.model_call", s.id, seq)
	err = openErr
	s.mu.Unlock()
	var res api.ModelResult
	var partial *model.Partial // what a failed call had received
	if err == nil {
		// A streamed call is announced live (model_request) with its first
		// delta and closed live with its usage (model_usage); none of
		// these frames is journalled.
		var announce sync.Once
		var streamed atomic.Bool
		var deltas atomic.Uint64
		onDelta := func(d model.Delta) {
			announce.Do(func() {
				streamed.Store(true)
				s.e.hub.publishRequest(s.id, seq, req)
			})
			s.e.hub.publishDelta(s.id, seq, deltas.Add(1)-1, d)
		}
		cctx, done := x.callCtx(ctx)
		res, err = call.Call(s.e.withSpan(cctx, span), onDelta)
		if err == nil && streamed.Load() {
			s.e.hub.publishUsage(s.id, seq, res.Usage)
		}
		var pe *model.PartialError
		if errors.As(err, &pe) {
			partial = &pe.Partial
		}
		if err != nil && cctx.Err() != nil {
			err = fmt.Errorf("model call: %w", context.Cause(cctx))
		}
		done()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		f := api.Failure{Code: api.CodeModelProviderFailed, Message: boundMessage(err.Error()), Sequence: seq}
		var pe *model.ProviderError
		var oe *model.OutputError
		switch {
		case errors.Is(err, ErrCancelled) || errors.Is(err, context.Canceled):
			f.Code = api.FailureCancelled
		case errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded):
			f.Code = api.FailureTimeout
		case errors.As(err, &oe):
			f.Code = oe.Code
		case errors.As(err, &pe):
			f.Retryable = pe.Retryable
			details := map[string]any{"provider_code": pe.Code}
			if pe.RetryAfter > 0 {
				// Reported only: Brain never retries a model call.
				details["retry_after_ms"] = pe.RetryAfter.Milliseconds()
			}
			f.Details, _ = json.Marshal(details)
		}
		endSpan(span, f.Code, f.Message)
		r := modelCallFailed{Failure: f}
		if partial != nil {
			r.Response = &modelResponse{StopReason: partial.StopReason, Usage: partial.Usage, UsageComplete: partial.UsageComplete}
		}
		if _, cerr := s.deferLocked(rec(api.KindModelCallFailed, r)); cerr != nil {
			return api.ModelResult{}, cerr
		}
		return api.ModelResult{}, &TurnError{Code: f.Code, Message: f.Message, Retryable: f.Retryable, Err: err}
	}
	endSpan(span, "", "")
	// The terminal record is folded before the caller sees the result and
	// rides on the session's next append (see deferLocked).
	if _, err := s.deferRefLocked(rec(api.KindModelCallEnded, modelCallEnded{Sequence: seq, Result: res}), seq); err != nil {
		return api.ModelResult{}, err
	}
	return res, nil
}

// overridesOf answers what req sets beyond its messages, or nil when it
// sets nothing else.
func overridesOf(req api.ModelRequest) *modelOverrides {
	if req.System == nil && req.Tools == nil && req.ResponseFormat == nil && req.MaxOutputTokens == nil && req.Options == nil {
		return nil
	}
	return &modelOverrides{System: req.System, Tools: req.Tools, ResponseFormat: req.ResponseFormat,
		MaxOutputTokens: req.MaxOutputTokens, Options: req.Options}
}

func hasTool(tools []api.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Emit commits an extension event with the execution's origin.
func (x *execution) Emit(ctx context.Context, eventType string, data json.RawMessage) (uint64, error) {
	if err := x.check(ctx, envapi.MethodEmit); err != nil {
		return 0, err
	}
	if !envapi.ValidIdentifier(eventType) {
		if eventType != "" && eventType[0] == '_' {
			return 0, fmt.Errorf("%w: %q", ErrReservedName, eventType)
		}
		return 0, fmt.Errorf("%w: event type %q is not an identifier", ErrInvalid, eventType)
	}
	if api.IsReserved(eventType) {
		return 0, fmt.Errorf("%w: %q", ErrReservedName, eventType)
	}
	payload, err := storedJSON(data)
	if err != nil {
		return 0, err
	}
	if err := x.charge(int64(len(eventType) + len(payload))); err != nil {
		return 0, err
	}
	if x.tool != nil {
		x.emitMu.Lock()
		defer x.emitMu.Unlock()
	}
	origin, _ := json.Marshal(x.origin)
	r := rec(api.KindExtensionEvent, extensionEvent{Kind: eventType, Payload: payload})
	r.Origin = origin
	return x.commitTool(r)
}

// charge takes n bytes from the emission budget of the originating turn.
func (x *execution) charge(n int64) error {
	max := x.s.e.cfg.Limits.MaxEmittedBytes
	if max <= 0 {
		return nil
	}
	for {
		cur := x.budget.emitted.Load()
		if cur+n > max {
			return fmt.Errorf("%w: %d of %d bytes used, %d more asked", ErrEmitLimit, cur, max, n)
		}
		if x.budget.emitted.CompareAndSwap(cur, cur+n) {
			return nil
		}
	}
}

// liveLocked refuses, under the session's lock, a call of an execution
// that completed, was cancelled or reached its deadline after the call
// was admitted: nothing is committed on its behalf once its authority
// ended.
func (x *execution) liveLocked(method string) error {
	x.mu.Lock()
	closed, lost := x.closed, x.unrecorded
	x.mu.Unlock()
	if lost != nil {
		return lost
	}
	if closed {
		return fmt.Errorf("%s: %w", method, ErrExecutionClosed)
	}
	return x.stopped(method)
}

// commitTool commits a record on behalf of the execution; for a tool it
// refuses once the tool is closed and records the event for its return.
func (x *execution) commitTool(r journal.Record) (uint64, error) {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if x.tool != nil && x.tool.closed {
		return 0, fmt.Errorf("%w: tool %d finished", ErrExecutionClosed, x.seq)
	}
	if err := x.liveLocked(r.Kind); err != nil {
		return 0, err
	}
	if err := x.openLocked(); err != nil {
		return 0, err
	}
	// The record is stamped in place: what the tool's return reports is
	// the record as committed, with its sequence and recording time.
	recs := []journal.Record{r}
	seq, err := s.commitLocked(recs...)
	if err != nil {
		return 0, err
	}
	if x.tool != nil {
		x.tool.noteLocked(recs[0])
	}
	return seq, nil
}

// storedJSON answers data as the journal stores and serves it: compact,
// with the characters JSON encoding escapes (<, >, &, U+2028, U+2029)
// escaped, so that what the emission budget counts is what is written.
func storedJSON(data json.RawMessage) (json.RawMessage, error) {
	c, err := compactJSON(data)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: data is not JSON: %v", ErrInvalid, err)
	}
	return out, nil
}

func compactJSON(data json.RawMessage) (json.RawMessage, error) {
	if len(data) == 0 {
		return json.RawMessage("null"), nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		return nil, fmt.Errorf("%w: data is not JSON: %v", ErrInvalid, err)
	}
	return out.Bytes(), nil
}

// Telemetry hands a diagnostic record, with the origin Brain assigns, to
// the telemetry pipeline; it is never journalled and never blocks. Only a
// record that is not JSON is refused.
func (x *execution) Telemetry(ctx context.Context, record json.RawMessage) error {
	if err := x.check(ctx, envapi.MethodTelemetry); err != nil {
		return err
	}
	if err := x.s.e.cfg.Telemetry.Accept(x.telemetryOrigin(), record); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// telemetryOrigin is who sends the execution's telemetry.
func (x *execution) telemetryOrigin() telemetry.Origin {
	o := telemetry.Origin{SessionID: x.s.id}
	if x.origin != nil {
		o.Origin = *x.origin
	}
	if x.act != nil {
		o.Turn, o.Activation = x.act.turn, x.act.seq
	}
	if x.tool != nil {
		o.Tool, o.Environment = x.tool.name, x.tool.env
	}
	if x.ctrl != nil {
		o.Environment = x.ctrl.Name
	}
	return o
}

// Events reads a page of public events after the cursor.
func (x *execution) Events(ctx context.Context, after uint64) (api.EventPage, error) {
	if err := x.check(ctx, envapi.MethodEvents); err != nil {
		return api.EventPage{}, err
	}
	s := x.s
	s.mu.Lock()
	err := s.flushLocked()
	if err == nil {
		err = s.closeUnendedForReadLocked()
	}
	s.mu.Unlock()
	if err != nil {
		return api.EventPage{}, err
	}
	return x.s.e.readEvents(ctx, x.s.id, after)
}

// SetTranscript commits the difference from the saved transcript.
func (x *execution) SetTranscript(ctx context.Context, messages []api.Message) (uint64, error) {
	if err := x.check(ctx, envapi.MethodSetTranscript); err != nil {
		return 0, err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := x.liveLocked(envapi.MethodSetTranscript); err != nil {
		return 0, err
	}
	if err := s.roomLocked(); err != nil {
		return 0, err
	}
	d := s.st.deltaByRef(s.st.Transcript, messages)
	// The messages kept are the saved ones, checked when they were saved:
	// only those the delta appends are checked here.
	for i := d.Keep; i < len(messages); i++ {
		if m := messages[i]; m.Role != api.RoleUser && m.Role != api.RoleAssistant && m.Role != api.RoleDeveloper {
			return 0, fmt.Errorf("%w: message %d has role %q", ErrInvalid, i, m.Role)
		}
	}
	return s.deferDeltaLocked(d)
}

// KVRead answers the stored value and whether key is present.
func (x *execution) KVRead(ctx context.Context, key string) (json.RawMessage, bool, error) {
	if err := x.check(ctx, envapi.MethodKVRead); err != nil {
		return nil, false, err
	}
	if err := checkKVKey(key); err != nil {
		return nil, false, err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.st.KV[key]
	return v, ok, nil
}

// checkKVKey refuses a key that is not an identifier
// (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$).
func checkKVKey(key string) error {
	if !envapi.ValidIdentifier(key) {
		return fmt.Errorf("%w: kv key %q is not an identifier", ErrInvalid, key)
	}
	return nil
}

// KVPut commits kv_set.
func (x *execution) KVPut(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	if err := x.check(ctx, envapi.MethodKVPut); err != nil {
		return 0, err
	}
	if err := checkKVKey(key); err != nil {
		return 0, err
	}
	v, err := compactJSON(value)
	if err != nil {
		return 0, err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := x.liveLocked(envapi.MethodKVPut); err != nil {
		return 0, err
	}
	if err := s.roomLocked(); err != nil {
		return 0, err
	}
	return s.deferLocked(rec(api.KindKVSet, kvSet{Key: key, Value: v}))
}

// KVDelete commits kv_delete; deleting an absent key appends nothing and
// answers the last committed sequence.
func (x *execution) KVDelete(ctx context.Context, key string) (uint64, error) {
	if err := x.check(ctx, envapi.MethodKVDelete); err != nil {
		return 0, err
	}
	if err := checkKVKey(key); err != nil {
		return 0, err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := x.liveLocked(envapi.MethodKVDelete); err != nil {
		return 0, err
	}
	if _, ok := s.st.KV[key]; !ok {
		return s.st.last(), nil
	}
	if err := s.roomLocked(); err != nil {
		return 0, err
	}
	return s.deferLocked(rec(api.KindKVDelete, kvDelete{Key: key}))
}
