package session

import (
	"context"
	"fmt"
)

// maxUnrecorded bounds how many tool calls whose finish could not be
// recorded the engine keeps answering for (unrecorded); past it, the
// oldest one's invocation token is revoked.
const maxUnrecorded = 1024

// unrecordedKey names a tool call of a session.
type unrecordedKey struct {
	id  string
	seq uint64
}

// unrecordedCalls are the tool calls whose finish the journal could not
// record. Such a call is closed in memory (nothing can record its finish
// any more: a reload, or the session's next write, closes it as failed,
// interrupted and ambiguous), but its provider, answered 503 storage
// unavailable, may well send the finish again. Its invocation token is
// kept live so that every later call of it is answered 409 conflict,
// saying what became of the call, rather than 401 as for a token never
// issued: until the session is deleted, or maxUnrecorded later ones
// push it out. Guarded by Engine.mu.
type unrecordedCalls struct {
	calls map[unrecordedKey]*execution
	order []unrecordedKey // oldest first
}

// unrecordedLocked notes that the finish of tool call t could not be
// recorded (err): its execution stays reachable (Engine.Execution) and
// answers every later call with the conflict that says so, and its
// invocation token is not revoked when it closes.
func (s *sess) unrecordedLocked(t *toolCall, err error) {
	why := s.e.fault(s.id, false)
	if why == "" {
		why = err.Error()
	}
	x := t.x
	x.mu.Lock()
	x.unrecorded = fmt.Errorf("%w: tool call %d: its finish could not be recorded (%s); the call is closed as interrupted, its outcome unknown, and takes no further calls", ErrWrongState, t.seq, why)
	x.mu.Unlock()
	e := s.e
	k := unrecordedKey{s.id, t.seq}
	var drop *execution
	e.mu.Lock()
	if e.unrecorded.calls == nil {
		e.unrecorded.calls = map[unrecordedKey]*execution{}
	}
	if _, ok := e.unrecorded.calls[k]; !ok {
		e.unrecorded.order = append(e.unrecorded.order, k)
	}
	e.unrecorded.calls[k] = x
	if len(e.unrecorded.order) > maxUnrecorded {
		old := e.unrecorded.order[0]
		e.unrecorded.order = e.unrecorded.order[1:]
		drop = e.unrecorded.calls[old]
		delete(e.unrecorded.calls, old)
	}
	e.mu.Unlock()
	if drop != nil {
		drop.revoke()
	}
}

// unrecordedExecution answers the execution of tool call seq of session
// id if its finish could not be recorded.
func (e *Engine) unrecordedExecution(id string, seq uint64) *execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.unrecorded.calls[unrecordedKey{id, seq}]
}

// forgetUnrecorded revokes the invocation tokens of the tool calls of
// session id whose finish could not be recorded (the session is deleted).
func (e *Engine) forgetUnrecorded(id string) {
	var drop []*execution
	e.mu.Lock()
	kept := e.unrecorded.order[:0]
	for _, k := range e.unrecorded.order {
		if k.id != id {
			kept = append(kept, k)
			continue
		}
		drop = append(drop, e.unrecorded.calls[k])
		delete(e.unrecorded.calls, k)
	}
	clear(e.unrecorded.order[len(kept):])
	e.unrecorded.order = kept
	e.mu.Unlock()
	for _, x := range drop {
		x.revoke()
	}
}

// unrecordedAnswer answers a call of an execution whose finish could not
// be recorded, nil for any other. What the session's failed commits left
// open is closed first, as a reload closes it (the session is acquired
// for a write: one kept in memory closes it at once, one that went is
// reloaded), so that the conflict is answered once the journal says what
// became of the call; while that cannot be written either, the call is
// answered ErrUnavailable (retry later).
func (x *execution) unrecordedAnswer(ctx context.Context) error {
	x.mu.Lock()
	lost := x.unrecorded
	x.mu.Unlock()
	if lost == nil {
		return nil
	}
	s, err := x.s.e.acquire(ctx, x.s.id, true)
	switch {
	case isNotFound(err):
		return lost
	case err != nil && refused(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		return err
	}
	defer s.releaseWrite()
	if err := s.lockLive(); err != nil {
		return lost
	}
	defer s.mu.Unlock()
	if err := s.closeUnendedForReadLocked(); err != nil {
		return err
	}
	return lost
}
