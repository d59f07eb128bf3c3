package session

import (
	"errors"
	"time"
)

// closeRetry is the timer that closes, for a session whose subscribers
// follow its events, what a commit that could not be written left open
// (an operation, a tool call, an activation, a turn), once the journal
// takes records again. Reads close it too (readableLocked, a reload),
// but a subscription opened before the fault reads nothing by itself:
// without the timer its reader would wait for the closing records until
// the session's next read, write or wake.
type closeRetry struct {
	t    *time.Timer
	wait time.Duration
}

// armClose starts the close retry of session id after an append the
// store refused, when the session has subscribers and no retry runs
// yet. It waits CoalesceWindow, then twice as long after each attempt
// the journal refused, up to maxFlushWait.
func (e *Engine) armClose(id string) {
	if !e.hub.watched(id) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.closers[id] != nil {
		return
	}
	if e.closers == nil {
		e.closers = map[string]*closeRetry{}
	}
	r := &closeRetry{wait: CoalesceWindow}
	e.closers[id] = r
	e.scheduleCloseLocked(id, r)
}

func (e *Engine) scheduleCloseLocked(id string, r *closeRetry) {
	r.t = time.AfterFunc(r.wait, func() { e.retryClose(id, r) })
}

// retryClose reads session id as Summary does, which commits the
// records closing what the failed commit left open (in memory, or by
// reloading the session from the journal), so that its subscribers
// receive them. It is tried again while the journal refuses them and
// the session has subscribers; it stops once they are written, when
// nobody follows the session any more (its next read closes them), when
// the session is gone and when the engine closes.
func (e *Engine) retryClose(id string, r *closeRetry) {
	e.mu.Lock()
	current := e.closers[id] == r && !e.closed
	e.mu.Unlock()
	if !current {
		return
	}
	var err error
	if e.hub.watched(id) {
		_, err = e.Summary(e.base, id)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closers[id] != r {
		return
	}
	if err == nil || e.closed || e.base.Err() != nil || !(errors.Is(err, ErrUnavailable) || refused(err)) {
		delete(e.closers, id)
		return
	}
	r.wait = min(2*r.wait, maxFlushWait)
	e.scheduleCloseLocked(id, r)
}

// forgetCloseLocked stops the close retry of session id (it is deleted).
func (e *Engine) forgetCloseLocked(id string) {
	if r := e.closers[id]; r != nil {
		r.t.Stop()
		delete(e.closers, id)
	}
}

// stopClosers stops every close retry (the engine closes).
func (e *Engine) stopClosers() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id := range e.closers {
		e.forgetCloseLocked(id)
	}
}
