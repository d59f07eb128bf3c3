package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// reactivate answers the projection of a session being acquired: kept,
// the projection kept when it was released, if the journal still ends
// where it does; else the fold of load.
func (e *Engine) reactivate(ctx context.Context, id string, kept *state) (*state, error) {
	if kept != nil {
		if next, err := e.store.Next(ctx, id); err == nil && next == kept.Next {
			return kept, nil
		}
	}
	return e.load(ctx, id)
}

// load folds a session from its checkpoint (when usable) and the journal
// records after it.
func (e *Engine) load(ctx context.Context, id string) (*state, error) {
	next, err := e.store.Next(ctx, id)
	if err != nil {
		if errors.Is(err, journal.ErrNotFound) {
			return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if next <= 1 {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	st := newState()
	if e.cfg.CheckpointEvery > 0 {
		if through, payload, err := e.store.ReadCheckpoint(ctx, id); err == nil && through < next {
			if c := fromCheckpoint(payload, id, through); c != nil {
				st = c
			}
		}
	}
	st.lookup = e.journalLookup(id)
	for st.Next < next {
		recs, err := e.store.Read(ctx, id, st.last(), 0, 0)
		if err != nil {
			return nil, fmt.Errorf("session %s: read: %w", id, err)
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			if err := st.apply(r); err != nil {
				// A record whose frame checked out but which does not
				// fold is damage, not the caller's invalid request.
				return nil, fmt.Errorf("session %s: %w: %w", id, journal.ErrDamaged, err)
			}
		}
	}
	if st.Config == nil {
		return nil, fmt.Errorf("session %s: no creation record: %w", id, journal.ErrDamaged)
	}
	return st, nil
}

// recoverLocked closes what a crash left open: every started effect without
// a terminal record becomes an ambiguous "interrupted" failure (never
// resent); an interrupted creation fails the session; an interrupted turn
// fails and the session returns to idle; an interrupted ending ends it. A
// session that ended, or whose creation failed, stays so.
func (s *sess) recoverLocked() error {
	st := s.st
	// What left the session open: a restart, or a commit of this process
	// that could not be written.
	restart, creation, ending := "interrupted by a restart", "creation interrupted by a restart", "ending interrupted by a restart"
	if why := s.e.fault(s.id, false); why != "" {
		restart, creation, ending = why, "creation: "+why, "ending: "+why
	}
	var recs []journal.Record
	seqs := make([]uint64, 0, len(st.Open))
	for seq := range st.Open {
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for _, seq := range seqs {
		recs = append(recs, failed(st.Open[seq].Prefix+"_failed", api.Failure{
			Code: api.FailureInterrupted, Message: restart, Ambiguous: true, Sequence: seq,
		}))
	}
	// A session whose journal holds its final record (session_ended, or
	// session_creation_failed) never runs again: what a delete started
	// after it (a teardown) is closed as any open effect is, but no
	// activation, turn or interrupt rule is recorded after it. A
	// turn_failed would fold the session back to idle, reopening it to
	// messages.
	final := st.Status == api.StatusEnded || st.Status == api.StatusFailed
	if st.Activation != 0 && !final {
		recs = append(recs, failed(api.KindActivationFailed, api.Failure{
			Code: api.FailureInterrupted, Message: restart, Ambiguous: true, Sequence: st.Activation,
		}))
	}
	if st.Turn != 0 && !final {
		recs = append(recs, failed(api.KindTurnFailed, api.Failure{
			Code: api.FailureInterrupted, Message: restart, Ambiguous: true, Sequence: st.Turn,
		}))
	}
	switch st.Status {
	case api.StatusCreating:
		recs = append(recs, failed(api.KindSessionCreationFailed, api.Failure{
			Code: api.FailureInterrupted, Message: creation, Ambiguous: true, Sequence: 1,
		}))
	case api.StatusEnding:
		recs = append(recs,
			failed(api.KindSessionEndFailed, api.Failure{Code: api.FailureInterrupted, Message: ending, Ambiguous: true}),
			rec(api.KindSessionEnded, struct{}{}))
	}
	if len(recs) == 0 {
		// Nothing is open: a failure noted for the session explains
		// nothing any more.
		s.e.fault(s.id, true)
		return nil
	}
	// A restart that interrupts the loop's work (its turn, or a tool it
	// started) stops automatic activations until the next explicit
	// message (a session that fails or ends here has none anyway); one
	// that closes only environment operations, such as a turn-end
	// release, interrupts nothing of the loop's. The rule goes first,
	// before what it closes.
	interrupts := st.Turn != 0 || st.Activation != 0
	for _, o := range st.Open {
		interrupts = interrupts || o.Prefix == "tool_call"
	}
	if interrupts && !final && st.Status != api.StatusCreating && st.Status != api.StatusEnding && !st.Interrupted {
		recs = append([]journal.Record{rec(kindSessionInterrupted, struct{}{})}, recs...)
	}
	_, err := s.commitLocked(recs...)
	if err == nil {
		s.e.fault(s.id, true)
	}
	return err
}

// checkpointLocked writes the projection checkpoint when enough records
// accumulated since the last one. Failures are ignored: the checkpoint is
// disposable.
func (s *sess) checkpointLocked() {
	every := s.e.cfg.CheckpointEvery
	if every <= 0 || s.st == nil {
		return
	}
	// A checkpoint encodes the whole projection, so its interval grows
	// with what it covers (an eighth more records): the encoding cost per
	// record stays flat however long the session, and a reopen folds at
	// most that tail from the journal.
	if s.st.last() < s.ckptAt+max(uint64(every), s.ckptAt/8) {
		return
	}
	s.st.Session = s.id
	payload, err := s.st.encode()
	if err != nil {
		return
	}
	through := s.st.last()
	if s.e.store.WriteCheckpoint(context.WithoutCancel(s.e.base), s.id, through, payload) == nil {
		s.tally.Add(1)
		s.ckptAt = through
	}
}

// fromCheckpoint answers the projection a checkpoint through `through`
// holds, or nil when its payload is not one this engine can start from
// (then the journal is folded from its start): it must decode, be session
// id's (a checkpoint copied from another session may match this one's
// segment sizes), cover exactly through, hold the session's
// configuration, and name no environment without its state.
func fromCheckpoint(payload []byte, id string, through uint64) *state {
	c := newState()
	if json.Unmarshal(payload, c) != nil || c.Session != id || c.Next != through+1 || c.Config == nil {
		return nil
	}
	for _, e := range c.Envs {
		if e == nil {
			return nil
		}
	}
	// Maps the payload named null are empty, as a fresh projection's.
	if c.KV == nil {
		c.KV = map[string]json.RawMessage{}
	}
	if c.Open == nil {
		c.Open = map[uint64]openEffect{}
	}
	if c.Envs == nil {
		c.Envs = map[string]*envState{}
	}
	if c.Returned == nil {
		c.Returned = map[uint64]bool{}
	}
	c.ckptThrough = through
	return c
}
