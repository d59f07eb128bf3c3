package session

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// budget is shared by an activation and the tools it starts.
type budget struct {
	modelCalls atomic.Int64
	emitted    atomic.Int64
}

// activation is one running agentloop activation.
type activation struct {
	seq       uint64 // activation_started
	turn      uint64 // turn_started, 0 for event-triggered
	input     *api.UserInput
	batch     []uint64
	ctx       context.Context
	cancel    context.CancelCauseFunc
	budget    *budget
	exec      *execution
	done      chan struct{}
	startedAt int64
	turnSpan  trace.Span // nil when untraced
	span      trace.Span
	// dispatches counts the loop's Dispatch calls in flight (a remote
	// loop's come through its callback, beside the execute); dispatchIdle
	// is closed when it drops to zero. Guarded by sess.mu.
	dispatches   int
	dispatchIdle chan struct{}
	// ride is the idempotency bookkeeping of a synchronous send whose
	// claim rides the turn's commits (commits.Ride): its start records
	// are deferred to the turn's first commit, and its answer is
	// committed with the turn's end. (An async submission's ride is
	// committed whole with the start and is not kept here.)
	ride *commits.Ride
}

// Submit durably commits turn_started for input and answers its sequence
// before the turn runs. With a commits.Ride in ctx, the ride's claim and
// its answer (Ride.Answer of that sequence) are in the same commit. A session that is running an activation answers an
// error wrapping ErrBusy (details {"admission":"rejected"}).
func (e *Engine) Submit(ctx context.Context, id string, input api.UserInput) (uint64, error) {
	seq, _, err := e.submit(ctx, id, input, false)
	return seq, err
}

// Send runs a turn and waits for its end. A failed turn answers a
// *TurnError with the turn's failure code, after the failure is committed.
func (e *Engine) Send(ctx context.Context, id string, input api.UserInput) (api.SessionSummary, error) {
	seq, done, err := e.submit(ctx, id, input, true)
	if err != nil {
		return api.SessionSummary{}, err
	}
	select {
	case res := <-done:
		return res.summary, res.err
	case <-ctx.Done():
		return api.SessionSummary{}, fmt.Errorf("session %s: waiting for turn %d: %w", id, seq, ctx.Err())
	}
}

// turnResult is what a waiting Send receives when its turn ends.
type turnResult struct {
	summary api.SessionSummary
	err     error
}

func (e *Engine) submit(ctx context.Context, id string, input api.UserInput, wait bool) (uint64, chan turnResult, error) {
	if input.Message == "" {
		return 0, nil, fmt.Errorf("%w: input.message must not be empty", ErrInvalid)
	}
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return 0, nil, err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return 0, nil, err
	}
	defer s.mu.Unlock()
	switch {
	case s.act != nil || s.replacing > 0 || s.st.Status == api.StatusRunning || s.st.Status == api.StatusCreating:
		return 0, nil, fmt.Errorf("session %s: %w", id, ErrBusy)
	case s.st.Status != api.StatusIdle:
		return 0, nil, fmt.Errorf("%w: session %s is %s", ErrWrongState, id, s.st.Status)
	}
	s.stopWakeLocked()
	s.tally = commits.From(ctx)
	ride := commits.RideFrom(ctx)
	s.parent = trace.SpanContextFromContext(ctx)
	seq, err := s.startLocked(&input, ride, !wait)
	if err != nil {
		s.tally = nil
		s.parent = trace.SpanContext{}
		return 0, nil, err
	}
	var done chan turnResult
	if wait {
		done = make(chan turnResult, 1)
		s.waiters[seq] = done
	} else {
		// The caller is answered now; the turn's commits come after.
		s.tally = s.tally.Detached()
	}
	return seq, done, nil
}

// startLocked commits the start of an activation (with turn_started when
// input is given) in one append and runs it in the background. With a
// ride, the ride's claim record goes with the start. For a turn whose
// caller is answered now (answered: Submit), the start commits at once
// with the claim and the ride's answer record, the turn_started sequence:
// one commit holds the claim and its answer. Otherwise (Send, with a ride
// or without) the start and any claim are deferred (deferLocked): they are
// appended together with the turn's first commit (its first *_started
// fence, or its end), and nothing durable holds the turn or its claim
// until then; nobody is answered before the turn ends. An activation on
// events commits its start at once.
func (s *sess) startLocked(input *api.UserInput, ride *commits.Ride, answered bool) (uint64, error) {
	batch := s.st.Actionable
	if len(batch) > api.MaxPageEvents {
		batch = batch[:api.MaxPageEvents]
	}
	batch = append([]uint64(nil), batch...)
	var recs []journal.Record
	first := s.st.Next
	a := &activation{input: input, batch: batch, budget: &budget{}, done: make(chan struct{})}
	if input != nil {
		recs = append(recs, rec(api.KindTurnStarted, turnStarted{Input: *input}))
		a.turn = first
		recs = append(recs, rec(api.KindActivationStarted, activationStarted{Sequence: first, Trigger: "turn", Events: batch}))
		a.seq = first + 1
	} else {
		recs = append(recs, rec(api.KindActivationStarted, activationStarted{Trigger: "events", Events: batch}))
		a.seq = first
	}
	if ride != nil && input != nil {
		recs = append(recs, journal.Record{Kind: commits.ClaimKind, Data: ride.Claim})
		if answered {
			// The claim and its answer precede nothing of the turn but
			// its start, so the caller's answer is the turn_started
			// sequence; the turn's end carries no answer.
			if data := ride.Answer(first, nil); data != nil {
				recs = append(recs, journal.Record{Kind: commits.AnswerKind, Data: data})
			}
			ride = nil
		}
	}
	if input != nil && !answered {
		if _, err := s.deferLocked(recs...); err != nil {
			return 0, err
		}
		a.ride = ride
	} else if _, err := s.commitLocked(recs...); err != nil {
		if refused(err) {
			return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return 0, err
	}
	a.startedAt = s.st.LastAtMs
	ctx, cancel := context.WithCancelCause(s.e.base)
	stopTimer := func() {}
	if d := s.e.cfg.Limits.MaxTurn; d > 0 {
		ctx, stopTimer = context.WithTimeoutCause(ctx, d, s.e.turnTimeout)
	}
	ctx = s.traceActivationLocked(ctx, a)
	a.ctx = ctx
	a.cancel = func(cause error) { cancel(cause); stopTimer() }
	var grants []api.EnvironmentGrant
	if s.st.Config.Agentloop != nil {
		grants = s.st.Config.Agentloop.Environments
	}
	a.exec = &execution{s: s, seq: a.seq, loop: true, act: a, budget: a.budget, ctx: ctx, done: make(chan struct{}), grants: grants,
		origin: &api.EventOrigin{Kind: api.OriginAgentloop, Sequence: a.seq}}
	s.execs[a.seq] = a.exec
	s.act = a
	s.e.work.Add(1)
	s.e.runners.run(func() { s.run(a) })
	return first, nil
}

// run executes an activation and commits its end.
func (s *sess) run(a *activation) {
	defer s.e.work.Done()
	in, loop, remote, err := s.prepare(a)
	var out api.TurnOutput
	switch {
	case err != nil:
	case remote != "":
		// The execute carries the turn to another party: its start is
		// durable first.
		if err = s.flush(); err == nil {
			out, err = s.runRemote(a, in, remote)
		}
	default:
		out, err = callLoop(a.ctx, loop, a.exec, in)
	}
	if err == nil && a.ctx.Err() != nil {
		err = context.Cause(a.ctx)
	}
	if a.ctx.Err() != nil {
		// A stopped activation closes after the outcomes of the tools it
		// was dispatching are recorded and their cancels answered.
		<-s.dispatchesDone(a)
	}
	if cause := context.Cause(a.ctx); err != nil && cause != nil && !errors.Is(err, cause) {
		// The loop failed because its activation was cancelled or timed
		// out; record that cause.
		err = fmt.Errorf("%w (%v)", cause, err)
	}
	s.finish(a, out, err)
}

// dispatchesDone answers a channel closed once no Dispatch of activation
// a is in flight.
func (s *sess) dispatchesDone(a *activation) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.dispatches == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if a.dispatchIdle == nil {
		a.dispatchIdle = make(chan struct{})
	}
	return a.dispatchIdle
}

// callLoop runs the loop and turns a panic into an error.
func callLoop(ctx context.Context, loop agentloop.Func, svc agentloop.Services, in api.TurnInput) (out api.TurnOutput, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("agentloop panicked: %v", r)
		}
	}()
	return loop(ctx, svc, in)
}

// prepare resolves the in-process loop, or names the environment of a
// remote one, and builds the activation's input. The loop is resolved
// without the session's lock, under the activation's context: a
// resolution that waits (for a module to be compiled) holds nothing an
// interrupt needs, and ends when the activation is cancelled or its
// deadline passes.
func (s *sess) prepare(a *activation) (api.TurnInput, agentloop.Func, string, error) {
	s.mu.Lock()
	conf := s.st.Config
	s.mu.Unlock()
	remote := remoteLoop(conf)
	var loop agentloop.Func
	if remote == "" {
		var err error
		if loop, err = s.e.loop(a.ctx, conf.Agentloop); err != nil {
			return api.TurnInput{}, nil, "", err
		}
	}
	s.mu.Lock()
	kv := make(map[string]json.RawMessage, len(s.st.KV))
	for k, v := range s.st.KV {
		kv[k] = v
	}
	seed := sha256.New()
	seed.Write([]byte(s.id))
	_ = binary.Write(seed, binary.BigEndian, a.seq)
	in := api.TurnInput{
		Input: a.input, Transcript: s.st.lend(), KV: kv, Events: []api.Event{},
		Configuration: conf.Agentloop.Configuration, System: conf.System, Tools: activationTools(conf.Tools),
		Runtime: api.Runtime{LogicalTimeMs: a.startedAt, DeterministicSeed: seed.Sum(nil)},
	}
	if in.Transcript == nil {
		in.Transcript = []api.Message{}
	}
	s.mu.Unlock()
	// The batch's records are committed: they are read without the
	// session's lock. One that cannot be read fails the activation, which
	// leaves the batch pending, rather than ending it as delivered to a
	// loop that never saw it.
	for _, seq := range a.batch {
		recs, err := s.e.store.Read(a.ctx, s.id, seq-1, 1, 0)
		if err == nil && len(recs) == 0 {
			err = fmt.Errorf("%w: no record", journal.ErrNotFound)
		}
		if err != nil {
			return api.TurnInput{}, nil, "", &TurnError{Code: api.FailureAgentloopFailed, Retryable: true, Err: err,
				Message: fmt.Sprintf("reading the activation's event %d: %v", seq, err)}
		}
		if ev, ok := s.e.project(s.id, recs[0]); ok {
			in.Events = append(in.Events, ev)
		}
	}
	return in, loop, remote, nil
}

func activationTools(tools []api.Tool) []api.ActivationTool {
	out := make([]api.ActivationTool, 0, len(tools))
	for _, t := range tools {
		envs := make([]string, 0, len(t.Placements))
		for name := range t.Placements {
			envs = append(envs, name)
		}
		sort.Strings(envs)
		out = append(out, api.ActivationTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Environments: envs})
	}
	return out
}

// finish commits the end of an activation and of its turn.
func (s *sess) finish(a *activation, out api.TurnOutput, loopErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.exec.close()
	delete(s.execs, a.seq)
	recs, turnErr := s.endRecordsLocked(a, out, loopErr)
	faulted, undone := false, false
	var err error
	if started := s.startPendingLocked(a); started && s.pendingRefused != nil && s.refusedThrough >= a.turn {
		// The store refused the commit that carried the riding turn's
		// deferred start (a full disk): nothing of the turn is durable and
		// no effect was sent. The turn is undone even if the store would
		// take its end now (space came back meanwhile), so that a fault
		// that passed is not kept as the answer of the caller's key. A
		// refusal of records held from before the turn started carried
		// nothing of it: the turn's end carries them, as it would carry
		// them had their flush not been refused.
		err = s.pendingRefused
	} else {
		_, err = s.commitLocked(recs...)
	}
	if errors.Is(err, journal.ErrTooLarge) && loopErr == nil {
		// The result cannot be journalled (it is larger than a record
		// may be): nothing was written, and the turn fails as a loop
		// that failed does.
		loopErr = fmt.Errorf("the turn's result of %d bytes is larger than a journal record may be: %w", len(out.Result), err)
		recs, turnErr = s.endRecordsLocked(a, api.TurnOutput{}, loopErr)
		_, err = s.commitLocked(recs...)
	}
	if err != nil {
		turnErr = err
		// The turn's end is not durable: the session is reloaded from
		// the journal on next use, which closes the turn as failed with
		// the fault as its message.
		faulted = true
		s.faulted = true
		s.unendedActivationLocked(a)
		// A riding turn whose deferred start never became durable left
		// nothing durable (no effect was sent: each one's *_started
		// commit would have carried the start): it is undone in
		// memory, and its caller may release its claim.
		undone = s.startPendingLocked(a)
		if undone {
			// Whatever refused the commit (a full disk, a database that
			// is down, a lease lost to another node), nothing was done.
			turnErr = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	endSpanErr(a.span, errors.Join(loopErr, err))
	endSpanErr(a.turnSpan, errors.Join(loopErr, err))
	a.cancel(nil)
	s.act = nil
	close(a.done)
	ch := s.waiters[a.turn]
	delete(s.waiters, a.turn)
	var sum api.SessionSummary
	if ch != nil {
		sum = s.summaryLocked()
	}
	switch {
	case undone:
		s.dropLocked(turnErr)
	default:
		if a.turn != 0 {
			s.releaseAfterTurnLocked(a)
		}
		s.scheduleWakeLocked()
		s.maybeEvictLocked(faulted)
	}
	s.tally = nil
	// The waiting caller is answered once the session is settled (and
	// passivated when its policy says so).
	if ch != nil {
		ch <- turnResult{summary: sum, err: turnErr}
	}
}

// startPendingLocked reports whether a is a riding turn whose deferred
// start is not durable yet: no commit carried it.
func (s *sess) startPendingLocked(a *activation) bool {
	return a.ride != nil && a.turn != 0 && len(s.pending) > 0 && s.pending[0].Sequence <= a.turn
}

// endRecordsLocked builds the records that end activation a (and its
// turn) with out or, when loopErr is set, with that failure, the answer
// of a riding turn first; turnErr is what the turn's caller is answered.
func (s *sess) endRecordsLocked(a *activation, out api.TurnOutput, loopErr error) (recs []journal.Record, turnErr error) {
	if loopErr == nil {
		delivered := s.st.Delivered
		for _, seq := range a.batch {
			delivered = max(delivered, seq)
		}
		recs = append(recs, rec(api.KindActivationEnded, activationEnded{Sequence: a.seq, DeliveredThrough: delivered}))
		if a.turn != 0 {
			recs = append(recs, rec(api.KindTurnEnded, turnEnded{Sequence: a.turn, Result: out.Result}))
		}
	} else {
		code, retryable := failureCode(loopErr)
		msg := failureMessage(loopErr)
		recs = append(recs, failed(api.KindActivationFailed, api.Failure{Code: code, Message: msg, Retryable: retryable, Sequence: a.seq}))
		if a.turn != 0 {
			recs = append(recs, failed(api.KindTurnFailed, api.Failure{Code: code, Message: msg, Retryable: retryable, Sequence: a.turn}))
		}
		turnErr = &TurnError{Code: code, Message: msg, Retryable: retryable, Sequence: a.turn, Err: loopErr}
	}
	if a.ride != nil && a.turn != 0 {
		// The answer rides the turn's end, before it, so that the end
		// stays the turn's last record: the answered summary is the
		// session after this commit.
		last := s.st.Next + uint64(len(recs))
		sum := api.SessionSummary{SessionID: s.id, Status: api.StatusIdle, LastSequence: last}
		if data := a.ride.Answer(sum, turnErr); data != nil {
			recs = append([]journal.Record{{Kind: commits.AnswerKind, Data: data}}, recs...)
		}
	}
	return recs, turnErr
}

// turnRelease is the turn-end cleanup of one turn, waiting for the tools
// the turn started whose execution resources are not yet released (see
// freeToolLocked).
type turnRelease struct {
	turn    uint64
	waiting map[uint64]bool // tool calls of the turn still holding resources
}

// releaseAfterTurnLocked arranges call {name: on_turn_end, input:
// {sequence}} to every ready environment whose setup registered a
// turn-end method. It runs after the turn's answer is committed and handed
// out; its failure does not change the turn. Tools the turn started and
// left unfinished defer it until they are closed. Until it is sent and
// answered the engine's drain waits for it and the session stays in
// memory.
func (s *sess) releaseAfterTurnLocked(a *activation) {
	if s.e.cfg.Environments == nil {
		return
	}
	hooked := false
	for _, name := range s.envNamesLocked(envReady) {
		hooked = hooked || s.st.Envs[name].OnTurnEnd != ""
	}
	if !hooked {
		return
	}
	r := &turnRelease{turn: a.turn, waiting: map[uint64]bool{}}
	for seq, t := range s.holding {
		if t.x.act == a {
			r.waiting[seq] = true
		}
	}
	s.inflight++
	s.e.work.Add(1)
	if len(r.waiting) == 0 {
		s.sendReleaseLocked(r)
		return
	}
	s.releases = append(s.releases, r)
}

// toolReleasedLocked notes that the execution resources of tool seq are
// released and sends the turn-end cleanups that waited only for it.
func (s *sess) toolReleasedLocked(seq uint64) {
	kept := s.releases[:0]
	for _, r := range s.releases {
		delete(r.waiting, seq)
		if len(r.waiting) == 0 {
			s.sendReleaseLocked(r)
			continue
		}
		kept = append(kept, r)
	}
	s.releases = kept
}

// sendReleaseLocked sends a turn's cleanup calls in the background; the
// caller took s.inflight and one count of the engine's wait group.
// End waits for the cleanups sent (s.envBusy) before it detaches.
func (s *sess) sendReleaseLocked(r *turnRelease) {
	s.envBusyLocked()
	go func() {
		defer s.e.work.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		var names []string
		if s.st != nil {
			names = s.envNamesLocked(envReady)
		}
		for _, name := range names {
			// Each call releases the lock while it is delivered: an
			// ending (or deleted) session detaches its environments
			// instead, and an environment no longer ready is not called.
			if s.st == nil || s.st.Status == api.StatusEnding || s.st.Status == api.StatusEnded {
				break
			}
			es := s.st.Envs[name]
			if es == nil || es.State != envReady || es.OnTurnEnd == "" {
				continue
			}
			s.envOpLocked(s.e.base, name, envapi.Call(es.OnTurnEnd, mustJSON(ref{Sequence: r.turn})), nil)
		}
		s.envDoneLocked()
		s.inflight--
		s.maybeEvictLocked(false)
	}()
}

// Interrupt cancels the running activation and every unfinished tool of
// the session (their outcomes are recorded as cancelled and a cancel is
// sent to each tool's environment). The session stays usable; no
// automatic activation starts until the next message. That rule is
// recorded (a private _session_interrupted record) before anything is
// cancelled, so that it holds after passivation and restarts; a
// passivated session is loaded to record it.
func (e *Engine) Interrupt(ctx context.Context, id string) error {
	if !ValidSessionID(id) {
		return fmt.Errorf("%w: malformed session id %q", ErrInvalid, id)
	}
	e.mu.Lock()
	s := e.live[id]
	e.mu.Unlock()
	if s != nil {
		// A live session is interrupted without an admission: an
		// interrupt still reaches the work a drain waits for.
		s.mu.Lock()
		if !s.evicted && s.st != nil {
			defer s.mu.Unlock()
			err := s.interruptLocked()
			// A stopped wake-up may have been all that kept it.
			s.maybeEvictLocked(false)
			return err
		}
		s.mu.Unlock()
	}
	s, err := e.acquire(ctx, id, true)
	if err != nil {
		return err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.interruptLocked()
}

// interruptLocked records the interrupt, when the session could activate
// again and no earlier one holds, then cancels what runs. Work is
// cancelled even when the record fails: the caller asked for it to stop.
func (s *sess) interruptLocked() error {
	s.stopWakeLocked()
	// What a lost end left open (a turn nothing runs any more) is closed
	// first, as the admission of any other write closes it: a live
	// session is interrupted without one.
	_ = s.closeUnendedLocked()
	var err error
	if st := s.st.Status; (st == api.StatusIdle || st == api.StatusRunning) && !s.st.Interrupted {
		if _, cerr := s.commitLocked(rec(kindSessionInterrupted, struct{}{})); cerr != nil {
			err = fmt.Errorf("session %s: recording the interrupt: %w", s.id, cerr)
		}
	}
	if s.act != nil {
		s.act.cancel(fmt.Errorf("interrupted: %w", ErrCancelled))
	}
	s.cancelToolsLocked(fmt.Errorf("interrupted: %w", ErrCancelled))
	return err
}

// scheduleWakeLocked arms the coalescing timer of an event-triggered
// activation when committed results are pending and nothing runs. An
// armed timer is work Close waits for: a result that arrives while the
// engine drains (a tool admitted before it finishing) still wakes the
// loop, and the drain waits for that activation. Once Close has stopped
// waiting nothing is armed.
func (s *sess) scheduleWakeLocked() {
	if s.wake != nil || s.act != nil || s.replacing > 0 || s.st == nil || s.st.Interrupted || s.st.Status != api.StatusIdle || !s.wakeDueLocked() {
		return
	}
	if s.e.base.Err() != nil {
		return
	}
	s.e.work.Add(1)
	s.wakeGen++
	gen := s.wakeGen
	s.wake = time.AfterFunc(CoalesceWindow, func() { s.fireWake(gen) })
}

// stopWakeLocked disarms the wake-up timer, if armed; the work it held
// is done unless the timer already fired (then fireWake does it).
func (s *sess) stopWakeLocked() {
	if s.wake == nil {
		return
	}
	if s.wake.Stop() {
		s.e.work.Done()
	}
	s.wake = nil
}

// wakeDueLocked reports whether an actionable record is pending that no
// failed activation has already been handed: a failure or cancel leaves
// its batch pending for the next activation, which it does not start
// itself (no automatic retry).
func (s *sess) wakeDueLocked() bool {
	n := len(s.st.Actionable)
	return n > 0 && s.st.Actionable[n-1] > s.st.Held
}

// fireWake starts the event-triggered activation the timer armed as
// generation gen was for, unless something started or stopped it
// meanwhile or the engine stopped.
func (s *sess) fireWake(gen uint64) {
	defer s.e.work.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil || s.wakeGen != gen {
		// Disarmed after it fired; another timer may be armed since.
		return
	}
	s.wake = nil
	if !s.evicted && s.st != nil && s.closeUnendedLocked() != nil {
		// What a lost end left open is not closed yet: no activation
		// starts beside it (a reload, or the next write, closes it).
		s.maybeEvictLocked(false)
		return
	}
	if s.e.base.Err() != nil || s.evicted || s.act != nil || s.replacing > 0 || s.st.Interrupted || s.st.Status != api.StatusIdle || !s.wakeDueLocked() {
		s.maybeEvictLocked(false)
		return
	}
	s.tally = nil
	if _, err := s.startLocked(nil, nil, false); err != nil {
		s.maybeEvictLocked(false)
	}
}
