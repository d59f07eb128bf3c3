package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/brain/internal/journal"
)

// ErrOwnedElsewhere is wrapped when another live node holds the lease on a
// session's activations: the write belongs to that node.
var ErrOwnedElsewhere = errors.New("session: owned by another node")

// Ownership is the cluster's lease on sessions' activations (nil in
// Config: one process owns every session). Own answers the epoch of the
// live lease this node holds on a session, taking it (with a higher
// epoch) when it is free or expired; it fails with an error wrapping
// ErrOwnedElsewhere when another live node holds it. Release gives up the
// lease of epoch (a passivated session needs none). The store fences
// every append on the lease, so a node that lost it never commits.
type Ownership interface {
	Own(ctx context.Context, id string) (epoch int64, err error)
	// Held answers the epoch of the live lease this node holds on id
	// without asking the database.
	Held(id string) (epoch int64, ok bool)
	// Release must forget the lease at once (it may give it back to
	// the database later): it is called under the engine's lock.
	Release(id string, epoch int64)
}

// holds reports whether this node still holds the lease of epoch on id
// (always, without Ownership).
func (e *Engine) holds(id string, epoch int64) bool {
	if e.cfg.Ownership == nil {
		return true
	}
	ep, ok := e.cfg.Ownership.Held(id)
	return ok && ep == epoch
}

// own takes or confirms this node's lease on id before a write; without
// Ownership it answers 0.
func (e *Engine) own(ctx context.Context, id string) (int64, error) {
	if e.cfg.Ownership == nil {
		return 0, nil
	}
	epoch, err := e.cfg.Ownership.Own(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("session %s: %w", id, err)
	}
	return epoch, nil
}

// releaseLeaseLocked gives up the lease of an evicted session.
func (s *sess) releaseLeaseLocked() {
	if s.e.cfg.Ownership != nil && s.epoch != 0 {
		s.e.cfg.Ownership.Release(s.id, s.epoch)
		s.epoch = 0
	}
}

// Lost stops the activations of session id run under the lease of epoch
// at once: the lease could not be renewed (or another node took it), so
// nothing the session does here could be committed. Its in-memory state is
// dropped; the next write takes the lease again and recovers the session
// from the journal as after a restart.
func (e *Engine) Lost(id string, epoch int64) {
	e.mu.Lock()
	s := e.live[id]
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch || s.evicted {
		return
	}
	s.dropLocked(errLeaseLost)
}

// errLeaseLost stops what a node runs of a session whose lease it lost,
// and refuses its commits: the request that waited on them is answered
// 503 overloaded (retryable), as its outcome belongs to the next owner.
var errLeaseLost = journal.Refusal("session: the lease on the session was lost")

// leasedLocked refuses a commit of a session whose lease this node no
// longer holds under the epoch it runs it with: the in-memory state of a
// dropped session, or of one whose lease was taken by another node and
// then again by this one, must never reach the journal (the store's fence
// checks only that this node holds some live lease on the session).
func (s *sess) leasedLocked() error {
	if s.e.cfg.Ownership == nil || s.e.holds(s.id, s.epoch) {
		return nil
	}
	return errLeaseLost
}

// dropLocked forgets the session's in-memory state without committing
// anything: activations and tools are cancelled (their commits are fenced
// off anyway), waiters are told, timers stopped.
func (s *sess) dropLocked(cause error) {
	e := s.e
	e.mu.Lock()
	if e.live[s.id] == s {
		delete(e.live, s.id)
	}
	e.released.drop(s.id)
	e.mu.Unlock()
	s.evicted = true
	s.epoch = 0
	if s.act != nil && s.act.cancel != nil {
		s.act.cancel(cause)
	}
	for _, t := range s.tools {
		if t.cancel != nil {
			t.cancel(cause)
		}
	}
	s.stopWakeLocked()
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.flushT != nil {
		s.flushT.Stop()
		s.flushT = nil
	}
	s.pending = nil
	s.heldBytes = 0
}

// acquireActive answers the session if it is active on this node.
func (e *Engine) acquireActive(id string) (*sess, bool) {
	e.mu.Lock()
	s := e.live[id]
	if s == nil {
		e.mu.Unlock()
		return nil, false
	}
	s.refs.Add(1)
	e.mu.Unlock()
	s.mu.Lock()
	ok := !s.evicted && s.loadErr == nil
	s.mu.Unlock()
	if !ok {
		s.refs.Add(-1)
	}
	return s, ok
}

// readOnly folds a session that is not active on this node from the
// journal for one read, without recovering it: another node may be
// running it, and only the lease holder may close what it left open.
func (e *Engine) readOnly(ctx context.Context, id string) (*sess, error) {
	if !ValidSessionID(id) {
		return nil, fmt.Errorf("%w: malformed session id %q", ErrInvalid, id)
	}
	st, err := e.load(ctx, id)
	if err != nil {
		return nil, err
	}
	s := &sess{e: e, id: id, st: st, ckptAt: st.ckptThrough, evicted: true, tools: map[uint64]*toolCall{}, execs: map[uint64]*execution{}, waiters: map[uint64]chan turnResult{}}
	s.refs.Add(1)
	return s, nil
}

// errFaulted ends the in-memory life of a session whose last commit
// failed; nothing runs in it when it is dropped with this cause.
var errFaulted = errors.New("session: a commit failed; the session is read again from the journal")
