package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// defaultCancelDelivery is Config.CancelDelivery's default.
const defaultCancelDelivery = 10 * time.Second

// toolCall is one open tool call. Fields are guarded by sess.mu.
type toolCall struct {
	seq       uint64
	callID    string
	name      string
	env       string
	x         *execution
	cancel    context.CancelCauseFunc
	stopWatch func() bool
	closed    bool
	returned  bool
	// retSeq and retOut are the sequence and outcome of the
	// tool_call_returned record that ended the synchronous phase.
	retSeq    uint64
	retOut    *api.Outcome
	executing bool
	syncDone  chan struct{} // closed when the synchronous phase ends
	settled   chan struct{} // closed when closed and any cancel op is done
	isSettled bool          // settled is closed
	freed     bool          // closed, settled and no execute in flight
	events    []api.Event   // public events of the synchronous phase
	last      *api.Outcome  // the last emitted result
	output    *Schema       // the tool's output_schema, checked on ok outcomes
	span      trace.Span    // nil when untraced
	// stop is the environment's own timeout or cancelled failure, kept
	// beside the bare outcome in tool_call_ended.
	stop *api.Failure
	// finishing: the tool's own finish closes it (Finish).
	finishing bool
}

func (t *toolCall) syncOver() bool {
	select {
	case <-t.syncDone:
		return true
	default:
		return false
	}
}

// noteLocked remembers a committed record of the tool's synchronous phase.
func (t *toolCall) noteLocked(r journal.Record) {
	if t.syncOver() {
		return
	}
	if ev, ok := t.x.s.e.project(t.x.s.id, r); ok {
		t.events = append(t.events, ev)
	}
}

// Dispatch runs tool invocations in parallel. Each commits
// tool_call_started (all in one append) before its execute is sent; the
// call answers when every tool finished or returned, in call order.
func (x *execution) Dispatch(ctx context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	if err := x.check(ctx, envapi.MethodDispatch); err != nil {
		return nil, err
	}
	if len(calls) == 0 {
		return []api.ToolReturn{}, nil
	}
	s := x.s
	s.mu.Lock()
	if err := x.liveLocked(envapi.MethodDispatch); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// The activation does not close while the dispatch runs (see
	// activation.dispatchesDone).
	x.act.dispatches++
	defer func() {
		s.mu.Lock()
		x.act.dispatches--
		if x.act.dispatches == 0 && x.act.dispatchIdle != nil {
			close(x.act.dispatchIdle)
			x.act.dispatchIdle = nil
		}
		s.mu.Unlock()
	}()
	conf := s.st.Config
	var deadlineMs *int64
	if d := s.e.cfg.Limits.MaxTool; d > 0 {
		ms := d.Milliseconds()
		deadlineMs = &ms
	}
	recs := make([]journal.Record, len(calls))
	tools := make([]*api.Tool, len(calls))
	ids := make(envapi.CallIDs, len(calls))
	for i, c := range calls {
		// A call's result is matched to it by its call_id (a tool_result's
		// tool_use_id): one the loop cannot tell apart is refused.
		if err := ids.Add(i, c.CallID); err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		var tool *api.Tool
		for j := range conf.Tools {
			if conf.Tools[j].Name == c.Name {
				tool = &conf.Tools[j]
			}
		}
		if tool == nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: unknown tool %q", ErrInvalid, c.Name)
		}
		env := c.Environment
		if env == "" {
			names := make([]string, 0, len(tool.Placements))
			for n := range tool.Placements {
				names = append(names, n)
			}
			sort.Strings(names)
			env = names[0]
		}
		if _, ok := s.placementLocked(tool, env); !ok {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: tool %q is not placed on %q", ErrInvalid, c.Name, env)
		}
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		calls[i].Environment, calls[i].Input, tools[i] = env, input, tool
		_, binding := s.declLocked(env)
		recs[i] = rec(api.KindToolCallStarted, toolCallStarted{
			CallID: c.CallID, Name: c.Name, Environment: env, Binding: binding, Input: input,
			DeadlineMs: deadlineMs, Activation: x.act.seq,
		})
	}
	first, err := s.commitLocked(recs...)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	started := make([]*toolCall, len(calls))
	for i, c := range calls {
		started[i] = s.startToolLocked(x.act, first+uint64(i), c, tools[i], deadlineMs)
	}
	s.mu.Unlock()

	// Wait for every synchronous phase, or cancel the outstanding calls
	// when the caller (the turn) is cancelled.
	var cause error
	for _, t := range started {
		select {
		case <-t.syncDone:
			continue
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-x.ctx.Done():
			cause = context.Cause(x.ctx)
		}
		break
	}
	if cause != nil {
		if !errors.Is(cause, ErrCancelled) && !errors.Is(cause, ErrTimeout) {
			cause = fmt.Errorf("%v: %w", cause, ErrCancelled)
		}
		var wait []chan struct{}
		toolCause := fmt.Errorf("turn stopped (%v): %w", cause, ErrCancelled)
		s.mu.Lock()
		for _, t := range started {
			if !t.syncOver() {
				t.cancel(toolCause)
			}
			if !t.returned {
				wait = append(wait, t.settled)
			}
		}
		s.mu.Unlock()
		for _, ch := range wait {
			<-ch
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.ToolReturn, len(started))
	for i, t := range started {
		events := t.events
		if events == nil {
			events = []api.Event{}
		}
		out[i] = api.ToolReturn{CallID: t.callID, Sequence: t.seq, Events: events, Finished: t.closed}
	}
	if cause != nil {
		return out, fmt.Errorf("dispatch: %w", cause)
	}
	return out, nil
}

// startToolLocked opens a tool call whose started record is committed and
// sends its execute, unless its environment is not ready.
func (s *sess) startToolLocked(act *activation, seq uint64, c api.ToolInvocation, tool *api.Tool, deadlineMs *int64) *toolCall {
	tctx, cancel := context.WithCancelCause(s.e.base)
	stopTimer := func() {}
	if d := s.e.cfg.Limits.MaxTool; d > 0 {
		tctx, stopTimer = context.WithTimeoutCause(tctx, d, s.e.toolTimeout)
	}
	t := &toolCall{seq: seq, callID: c.CallID, name: c.Name, env: c.Environment, syncDone: make(chan struct{}), settled: make(chan struct{})}
	t.span = s.e.startToolSpan(act.ctx, s.id, seq, c.Name, c.Environment)
	tctx = s.e.withSpan(tctx, t.span)
	t.cancel = func(cause error) { cancel(cause); stopTimer() }
	t.x = &execution{s: s, seq: seq, act: act, tool: t, budget: act.budget, ctx: tctx, done: make(chan struct{}), grant: make(chan struct{}), grants: tool.Environments,
		origin: &api.EventOrigin{Kind: api.OriginTool, Sequence: seq}}
	s.tools[seq] = t
	s.execs[seq] = t.x
	if s.holding == nil {
		s.holding = map[uint64]*toolCall{}
	}
	s.holding[seq] = t
	// An open tool is admitted work until its resources are released
	// (freeToolLocked), also after it returned: Close drains it.
	s.e.work.Add(1)
	decl, binding := s.declLocked(c.Environment)
	if c.EnvironmentSequence != 0 && c.EnvironmentSequence != binding {
		// The loop pinned the call to an incarnation that is gone: it runs
		// nowhere rather than on the current one.
		s.closeToolLocked(t, envapi.ErrorOutcome(api.FailureEnvironmentIncarnationStale,
			fmt.Sprintf("environment %s incarnation %d is not the current one (%d); the call was not sent", c.Environment, c.EnvironmentSequence, binding), false, nil))
		return t
	}
	if es := s.st.Envs[c.Environment]; es == nil || es.State != envReady {
		s.closeToolLocked(t, envapi.ErrorOutcome(api.FailureEnvironmentNotReady,
			"environment "+c.Environment+" is not set up", false, nil))
		return t
	}
	if in, err := s.e.schemas.get(tool.InputSchema); err == nil {
		if err := in.Validate(c.Input); err != nil {
			s.closeToolLocked(t, envapi.ErrorOutcome(envapi.CodeInvalidInput,
				"tool "+tool.Name+" input does not match its input_schema: "+err.Error(), false, nil))
			return t
		}
	}
	if len(tool.OutputSchema) > 0 {
		t.output, _ = s.e.schemas.get(tool.OutputSchema)
	}
	t.stopWatch = context.AfterFunc(tctx, func() { s.toolStopped(t) })
	grant := &envapi.Grant{Methods: envapi.ToolMethods()}
	placement, _ := s.placementLocked(tool, c.Environment)
	op := s.operationLocked(tctx, decl, binding, seq,
		envapi.Execute(placement.Implementation, c.Input, deadlineMs, grant), act.budget)
	op.CallbackDone, op.Execution = t.x.grant, t.x
	op.Tool = tool.Name
	t.executing = true
	s.e.work.Add(1)
	s.e.runners.run(func() {
		defer s.e.work.Done()
		receipt, err := s.e.deliver(tctx, op)
		s.onReceipt(t, receipt, err)
	})
	return t
}

// placementLocked answers how env runs tool: its own placement, or for an
// instance created from a template, the template's.
func (s *sess) placementLocked(tool *api.Tool, env string) (api.Placement, bool) {
	if p, ok := tool.Placements[env]; ok {
		return p, true
	}
	if es := s.st.Envs[env]; es != nil && es.Template != "" {
		p, ok := tool.Placements[es.Template]
		return p, ok
	}
	return api.Placement{}, false
}

// onReceipt records the outcome an execute answered.
func (s *sess) onReceipt(t *toolCall, r envapi.Receipt, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeControllerLocked(t.seq)
	t.executing = false
	if t.closed {
		t.cancel(nil)
		s.freeToolLocked(t)
		s.maybeEvictLocked(false)
		return
	}
	if err != nil {
		if t.x.ctx.Err() != nil {
			return // the deadline or a cancel closes the call
		}
		if errors.Is(err, ErrInvalidReceipt) {
			s.closeToolLocked(t, envapi.UnknownOutcome(err.Error()))
			return
		}
		s.closeToolLocked(t, envapi.UnknownOutcome(err.Error()),
			rec(api.KindEnvironmentUnreachable, envUnreachable{Environment: t.env, Sequence: t.seq, Message: boundMessage(err.Error())}))
		return
	}
	// The outcome is read as envapi reads it, so that envtest reads a
	// provider's answer alike.
	o, closed := envapi.ToolOutcome(r)
	if !closed {
		if t.returned {
			return // the synchronous phase already ended through the returned method
		}
		var out *api.Outcome
		if o.Status != "" {
			ro := fromEnvOutcome(o)
			out, t.last = &ro, &ro
		}
		if _, err := s.returnLocked(t, out); err != nil {
			s.returnLostLocked(t, err)
		}
		return
	}
	if r.Type == envapi.ReceiptFailure && (r.Code == envapi.CodeTimeout || r.Code == envapi.CodeCancelled) {
		t.stop = &api.Failure{Code: r.Code, Message: boundMessage(r.Message), Retryable: r.Retryable, Details: r.Details}
	}
	s.closeToolLocked(t, o)
}

func fromEnvOutcome(o envapi.Outcome) api.Outcome {
	out := api.Outcome{Status: string(o.Status), Value: o.Value, Message: o.Message, Content: o.Content}
	if o.Error != nil {
		out.Error = &api.OutcomeError{Code: o.Error.Code, Message: o.Error.Message, Retryable: o.Error.Retryable, Details: o.Error.Details}
	}
	if out.Status == api.OutcomeOK && len(out.Value) == 0 {
		out.Value = json.RawMessage("null")
	}
	return out
}

// toolStopped runs when a tool's context ends: its own deadline closes it
// as timeout; a cancel closes it as cancelled and sends a cancel operation
// to its environment.
func (s *sess) toolStopped(t *toolCall) {
	s.mu.Lock()
	if t.closed {
		s.mu.Unlock()
		return
	}
	// The execute is stopped: its controller context closes.
	s.closeControllerLocked(t.seq)
	cause := context.Cause(t.x.ctx)
	if errors.Is(cause, ErrTimeout) {
		s.closeToolLocked(t, envapi.Outcome{Status: envapi.StatusTimeout})
		s.mu.Unlock()
		return
	}
	decl, binding := s.declLocked(t.env)
	cancelRec := rec(api.KindToolCancelStarted, toolCancelStarted{TargetSequence: t.seq, Environment: t.env})
	cancelSeq, err := s.closeToolLocked(t, envapi.Outcome{Status: envapi.StatusCancelled}, cancelRec)
	if err != nil {
		s.mu.Unlock()
		return
	}
	op := s.operationLocked(s.e.base, decl, binding, cancelSeq, envapi.Cancel(t.seq), nil)
	s.e.work.Add(1)
	s.inflight++
	s.mu.Unlock()
	defer s.e.work.Done()

	receipt, err := s.deliverCancel(op)
	// One locked region from the cancel's end to the release: a request
	// that finds the session in between would otherwise run on a state
	// whose last commit failed, before maybeEvictLocked sends it back to
	// the journal.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endCancelLocked(op, receipt, err)
	s.settleLocked(t)
	s.inflight--
	s.maybeEvictLocked(false)
}

// deliverCancel sends a cancel operation, whose tool_cancel_started is
// committed, to its environment (bounded by Config.CancelDelivery, never
// resent); endCancelLocked then commits its terminal record.
func (s *sess) deliverCancel(op Operation) (envapi.Receipt, error) {
	bound := s.e.cfg.CancelDelivery
	if bound <= 0 {
		bound = defaultCancelDelivery
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(s.e.base), bound)
	defer stop()
	return s.e.deliver(ctx, op)
}

// endCancelLocked commits the terminal record of a cancel operation from
// its environment's answer.
func (s *sess) endCancelLocked(op Operation, receipt envapi.Receipt, err error) {
	cancelSeq := op.Sequence
	s.closeControllerLocked(cancelSeq)
	switch {
	case errors.Is(err, ErrInvalidReceipt):
		_ = s.endOpLocked(failed(api.KindToolCancelFailed, api.Failure{Code: api.FailureUnknown, Message: err.Error(), Ambiguous: true, Sequence: cancelSeq}))
	case err != nil:
		_ = s.endOpLocked(
			rec(api.KindEnvironmentUnreachable, envUnreachable{Environment: op.Environment, Sequence: cancelSeq, Message: boundMessage(err.Error())}),
			failed(api.KindToolCancelFailed, api.Failure{Code: api.FailureUnknown, Message: err.Error(), Ambiguous: true, Sequence: cancelSeq}))
	case receipt.Type == envapi.ReceiptFailure:
		_ = s.endOpLocked(failed(api.KindToolCancelFailed, api.Failure{Code: receipt.Code, Message: receipt.Message, Retryable: receipt.Retryable, Details: receipt.Details, Sequence: cancelSeq}))
	case receipt.Type == envapi.ReceiptUnknown:
		// The provider cannot tell whether the invocation stopped: the
		// cancel's outcome is unknown (an explicit unknown is no sign of
		// an unreachable environment).
		_ = s.endOpLocked(failed(api.KindToolCancelFailed, api.Failure{Code: api.FailureUnknown, Message: receipt.Message, Ambiguous: true, Sequence: cancelSeq}))
	default:
		_ = s.endOpLocked(rec(api.KindToolCancelEnded, envEnded{Sequence: cancelSeq, Receipt: receipt}))
	}
}

// closeToolLocked commits the one terminal record of a tool call (after
// any extra records, whose first sequence it answers) and revokes the
// tool's authority. It answers ErrExecutionClosed for a call closed
// already, and the journal's error when the records could not be
// committed (the call is closed in memory all the same).
func (s *sess) closeToolLocked(t *toolCall, o envapi.Outcome, extra ...journal.Record) (uint64, error) {
	if t.closed {
		return 0, fmt.Errorf("%w: tool %d finished", ErrExecutionClosed, t.seq)
	}
	if o.Status == envapi.StatusOK && t.output != nil {
		if err := t.output.Validate(orNullJSON(o.Value)); err != nil {
			o = envapi.ErrorOutcome(envapi.CodeInvalidOutput, "tool output does not match its output_schema: "+err.Error(), false, nil)
		}
	}
	o = boundEnvOutcome(o)
	endToolSpan(t.span, o)
	out := fromEnvOutcome(o)
	recs := append([]journal.Record{rec(api.KindToolCallEnded, api.ToolCallEnded{Sequence: t.seq, Outcome: out, IsError: out.IsError(), Failure: t.stop})}, extra...)
	cancelling := len(extra) > 0 && extra[0].Kind == api.KindToolCancelStarted
	if !cancelling && len(extra) > 0 {
		recs = append(extra, recs[0])
	}
	var first uint64
	var err error
	if !cancelling && len(extra) == 0 && !t.syncOver() && !t.finishing {
		// The dispatch waiting for this synchronous phase is answered
		// in-process; the record rides on the session's next append. A
		// finish is answered to its provider, outside the engine: it is
		// committed, so that one that cannot be written is answered as
		// after the synchronous phase (unrecordedLocked).
		first, err = s.deferLocked(recs...)
	} else {
		first, err = s.commitLocked(recs...)
	}
	return s.toolClosedLocked(t, recs, first, err, cancelling)
}

// toolClosedLocked closes tool call t in memory once its terminal records
// recs were committed from first (or failed to be, with err): its
// authority is revoked, the dispatch waiting for its synchronous phase is
// answered, and a tool whose cancel was started (cancelling) settles once
// that cancel is answered. It answers first, or the cancel's sequence,
// and err.
func (s *sess) toolClosedLocked(t *toolCall, recs []journal.Record, first uint64, err error, cancelling bool) (uint64, error) {
	t.closed = true
	if err != nil && t.finishing {
		// The provider is answered storage unavailable and may send the
		// finish again: it is answered what became of the call.
		s.unrecordedLocked(t, err)
	}
	t.x.close()
	if err == nil {
		// The dispatch waiting for the synchronous phase is handed the
		// records; one that could not be written is none of the call's:
		// the dispatch reads the call finished with no outcome recorded,
		// as the journal closes it (interrupted, outcome unknown).
		for _, r := range recs {
			t.noteLocked(r)
		}
	}
	if t.stopWatch != nil {
		t.stopWatch()
	}
	if !t.executing {
		t.cancel(nil)
	}
	delete(s.tools, t.seq)
	delete(s.execs, t.seq)
	if !t.syncOver() {
		close(t.syncDone)
	}
	if err == nil {
		// Armed before the tool's own work is done, so that a drain
		// waiting for the tool waits for the activation its result wakes.
		s.scheduleWakeLocked()
	}
	if !cancelling {
		s.settleLocked(t)
	}
	if err != nil {
		if cancelling {
			// The cancel's start is not durable, so no cancel is sent:
			// the call is settled now.
			s.settleLocked(t)
		}
		// What is in memory is ahead of the journal: once nothing runs,
		// the session goes, to be reloaded from the journal; a write that
		// comes while other work of it runs closes the call first, as
		// that reload would (closeUnendedLocked).
		s.faulted = true
		s.noteUnendedLocked(recs)
		s.maybeEvictLocked(false)
		return 0, err
	}
	if !cancelling {
		s.maybeEvictLocked(false)
	}
	if cancelling {
		return first + 1, nil
	}
	return first, nil
}

// settleLocked notes that a closed tool's cancel, if any, is done.
func (s *sess) settleLocked(t *toolCall) {
	if t.isSettled {
		return
	}
	t.isSettled = true
	close(t.settled)
	s.freeToolLocked(t)
}

// freeToolLocked notes that a tool's execution resources are released
// once it is closed, its cancel (if any) is answered and its execute is no
// longer in flight, and sends the turn-end cleanups that waited only for
// it.
func (s *sess) freeToolLocked(t *toolCall) {
	if t.freed || !t.closed || !t.isSettled || t.executing {
		return
	}
	t.freed = true
	delete(s.holding, t.seq)
	s.toolReleasedLocked(t.seq)
	s.e.work.Done()
}

// returnLocked ends a tool's synchronous phase without finishing it.
func (s *sess) returnLocked(t *toolCall, out *api.Outcome) (uint64, error) {
	if t.closed {
		return 0, fmt.Errorf("%w: tool %d finished", ErrExecutionClosed, t.seq)
	}
	if out != nil {
		b := boundOutcome(*out)
		out = &b
	}
	if t.returned {
		// The synchronous phase ended once. The same returned again (a
		// callback sent again after its answer was lost) answers the
		// record it made; another outcome is refused, since it would
		// end a phase that is over.
		if out == nil || sameOutcome(out, t.retOut) {
			return t.retSeq, nil
		}
		return 0, fmt.Errorf("%w: tool %d returned already (sequence %d); a later result goes through the result or finish method", ErrWrongState, t.seq, t.retSeq)
	}
	seq, err := s.commitLocked(rec(api.KindToolCallReturned, toolOutcome{Sequence: t.seq, Outcome: out}))
	if err != nil {
		return 0, err
	}
	if !t.syncOver() {
		t.noteLocked(journal.Record{Sequence: seq, Kind: api.KindToolCallReturned, RecordedAtMs: s.st.LastAtMs, Data: mustJSON(toolOutcome{Sequence: t.seq, Outcome: out})})
		t.returned = true
		t.retSeq, t.retOut = seq, out
		close(t.syncDone)
	}
	return seq, nil
}

// returnLostLocked closes tool call t, whose provider answered that its
// synchronous phase is over, when that answer's tool_call_returned could
// not be written (err). Nothing durable says the phase ended, and the
// dispatch waiting for it must not wait for the whole tool, which runs on
// in the background: the call is closed as a reload of the journal would
// close it, failed (interrupted, ambiguous, with the write failure as its
// message), so that the loop is answered an unknown outcome and no later
// result or finish of the tool is recorded after it. No cancel is sent:
// its start could not be written either, and a reload sends none. When
// the failure cannot be written either, the session is faulted and the
// call closed at its next write (closeUnendedLocked) or reload.
func (s *sess) returnLostLocked(t *toolCall, err error) {
	if t.closed || t.returned {
		return
	}
	why := s.e.fault(s.id, false)
	if why == "" {
		why = "its tool_call_returned could not be written: " + err.Error()
	}
	endToolSpan(t.span, envapi.UnknownOutcome(why))
	recs := []journal.Record{failed(api.KindToolCallFailed, api.Failure{
		Code: api.FailureInterrupted, Message: why, Ambiguous: true, Sequence: t.seq,
	})}
	first, cerr := s.commitLocked(recs...)
	s.toolClosedLocked(t, recs, first, cerr, false)
}

// sameOutcome tells whether a and b encode to the same JSON.
func sameOutcome(a, b *api.Outcome) bool {
	if b == nil {
		return false
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func orNullJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// cancelToolsLocked cancels every open tool of the session.
func (s *sess) cancelToolsLocked(cause error) {
	for _, t := range s.tools {
		if !t.closed {
			t.cancel(cause)
		}
	}
}

// Result commits a tool result.
func (x *execution) Result(ctx context.Context, outcome api.Outcome) (uint64, error) {
	if err := x.check(ctx, envapi.MethodResult); err != nil {
		return 0, err
	}
	if err := validOutcome(outcome); err != nil {
		return 0, err
	}
	outcome = boundOutcome(outcome)
	// A result is an emission of the turn: its serialized kind and
	// payload count in the emission budget as an event's do.
	r := rec(api.KindToolResultEmitted, toolResultEmitted{Sequence: x.seq, Result: outcome})
	if err := x.charge(int64(len(r.Kind) + len(r.Data))); err != nil {
		return 0, err
	}
	x.emitMu.Lock()
	defer x.emitMu.Unlock()
	seq, err := x.commitTool(r)
	if err == nil {
		x.s.mu.Lock()
		x.tool.last = &outcome
		x.s.mu.Unlock()
	}
	return seq, err
}

// Returned ends the tool's synchronous phase.
func (x *execution) Returned(ctx context.Context, outcome *api.Outcome) (uint64, error) {
	if err := x.check(ctx, envapi.MethodReturned); err != nil {
		return 0, err
	}
	if outcome != nil {
		if err := validOutcome(*outcome); err != nil {
			return 0, err
		}
	}
	x.emitMu.Lock()
	defer x.emitMu.Unlock()
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := x.liveLocked(envapi.MethodReturned); err != nil {
		return 0, err
	}
	if outcome != nil {
		x.tool.last = outcome
	}
	return s.returnLocked(x.tool, outcome)
}

// Finish closes the tool with outcome, its last result, or ok null.
func (x *execution) Finish(ctx context.Context, outcome *api.Outcome) (uint64, error) {
	if err := x.check(ctx, envapi.MethodFinish); err != nil {
		return 0, err
	}
	if outcome != nil {
		if err := validOutcome(*outcome); err != nil {
			return 0, err
		}
	}
	x.emitMu.Lock()
	defer x.emitMu.Unlock()
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t := x.tool
	if t.closed {
		return 0, fmt.Errorf("%w: tool %d finished", ErrExecutionClosed, t.seq)
	}
	if err := x.liveLocked(envapi.MethodFinish); err != nil {
		return 0, err
	}
	o := outcome
	if o == nil {
		o = t.last
	}
	if o == nil {
		o = &api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage("null")}
	}
	t.finishing = true
	seq, err := s.closeToolLocked(t, toEnvOutcome(*o))
	if err != nil {
		// The journal's own error, so that the provider is answered that
		// storage failed (the finish was not recorded) rather than an
		// internal error.
		return 0, fmt.Errorf("session %s: finish of tool %d was not recorded: %w", s.id, t.seq, err)
	}
	return seq, nil
}

func toEnvOutcome(o api.Outcome) envapi.Outcome {
	out := envapi.Outcome{Status: envapi.OutcomeStatus(o.Status), Value: o.Value, Message: o.Message, Content: o.Content}
	if o.Error != nil {
		out.Error = &envapi.OutcomeError{Code: o.Error.Code, Message: o.Error.Message, Retryable: o.Error.Retryable, Details: o.Error.Details}
	}
	return out
}

func validOutcome(o api.Outcome) error {
	switch o.Status {
	case api.OutcomeOK, api.OutcomeTimeout, api.OutcomeCancelled, api.OutcomeUnknown:
		return nil
	case api.OutcomeFailed:
		if o.Error == nil || !envapi.ValidIdentifier(o.Error.Code) {
			return fmt.Errorf("%w: an error outcome needs error.code", ErrInvalid)
		}
		return nil
	}
	return fmt.Errorf("%w: outcome status %q", ErrInvalid, o.Status)
}
