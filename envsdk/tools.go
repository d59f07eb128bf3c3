package envsdk

import (
	"context"
	"errors"
	"time"
)

// The causes the handler gives a Tool's work context besides ErrCancelled
// and ErrDeadline.
var (
	errFinished = errors.New("envsdk: the Tool finished")
	errReleased = errors.New("envsdk: the binding was detached or torn down")
	errShutdown = errors.New("envsdk: the server stopped before the Tool finished")
)

// toolRun is the work of one execute: its context (Execution.Context)
// outlives the execute's answer when that is returned, and ends when Brain
// cancels it, at its deadline, when its binding is released, when the
// server gives up on it, or once it finished.
type toolRun struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopOp  context.CancelCauseFunc // the execute operation's context
	binding string
	inv     *Invocation

	// returned is set, under the handler's mu, once the execute answered
	// returned: the work goes on after the answer.
	returned bool
}

// newRun starts the work context of the execute c runs; it keeps the
// operation's values (its trace context), not its cancellation.
func newRun(c *Ctx, stopOp context.CancelCauseFunc, deadline time.Time) *toolRun {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(c.ctx))
	if !deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadlineCause(ctx, deadline, ErrDeadline)
		inner := cancel
		cancel = func(cause error) {
			inner(cause)
			cancelDeadline()
		}
	}
	return &toolRun{ctx: ctx, cancel: cancel, stopOp: stopOp, binding: c.BindingKey()}
}

// end stops the work for cause. A cancel revokes the grant at once, so
// that nothing the work sends after the cancel was answered reaches Brain.
func (r *toolRun) end(cause error) {
	if errors.Is(cause, ErrCancelled) {
		r.inv.revoke(cause)
	}
	r.cancel(cause)
	r.stopOp(cause)
}

// track registers run under key once its execute was claimed: when its
// context ends (for whatever cause) it is forgotten, and a deadline
// revokes its grant.
func (h *handler) track(key string, run *toolRun) {
	context.AfterFunc(run.ctx, func() {
		// The operation's context has the same deadline of its own (its
		// Err is then context.DeadlineExceeded, which providers test).
		if errors.Is(context.Cause(run.ctx), ErrDeadline) {
			run.inv.revoke(ErrDeadline)
		}
		h.mu.Lock()
		if h.running[key] == run {
			delete(h.running, key)
		}
		h.mu.Unlock()
	})
}

// stopReturned stops the work of every Tool of binding that answered
// returned and has not finished.
func (h *handler) stopReturned(binding string, cause error) {
	for _, r := range h.runs(func(r *toolRun) bool { return r.returned && r.binding == binding }) {
		r.end(cause)
	}
}

// stopTools stops the work of every execute still running, and of every
// Tool that answered returned and has not finished.
func (h *handler) stopTools() {
	for _, r := range h.runs(func(*toolRun) bool { return true }) {
		r.end(errShutdown)
	}
}

func (h *handler) runs(match func(*toolRun) bool) []*toolRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*toolRun
	for _, r := range h.running {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}
