package idem

import (
	"context"
	"errors"
	"sync"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// Claim claims (scope, key) for a request with digest. It answers a Claim
// when the request should run now, or the recorded Answer to replay. It
// fails with ErrConflict for a different request under the same key and
// ErrAmbiguous for a claim an earlier process never answered. A claim the
// same process is still running is awaited until ctx ends.
func (s *Store) Claim(ctx context.Context, scope, key string, digest [32]byte) (*Claim, *Answer, error) {
	return s.claim(ctx, &record{Type: typeClaim, Scope: scope, Key: key, Digest: digest}, false)
}

// ClaimHinted is Claim with a hint (1..MaxHintBytes bytes) recorded in
// the claim: what Options.Derive needs to find the request's answer in
// state kept elsewhere if the process ends before the answer recorded by
// Claim.AnswerDerivable is durable.
func (s *Store) ClaimHinted(ctx context.Context, scope, key string, digest [32]byte, hint []byte) (*Claim, *Answer, error) {
	return s.claim(ctx, &record{Type: typeHinted, Scope: scope, Key: key, Digest: digest, Hint: append([]byte(nil), hint...)}, false)
}

// claim claims r's key; a riding claim is not written (see ClaimRiding).
func (s *Store) claim(ctx context.Context, r *record, riding bool) (*Claim, *Answer, error) {
	scope, key, digest := r.Scope, r.Key, r.Digest
	if err := checkRecord(r); err != nil {
		return nil, nil, err
	}
	k := entryKey{scope, key}
	for {
		s.mu.Lock()
		if err := s.usableLocked(commits.From(ctx)); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		now := s.opts.Now().UnixMilli()
		e := s.entries[k]
		if e != nil && s.expired(e, now) {
			delete(s.entries, k)
			e = nil
		}
		if e != nil {
			switch {
			case e.digest != digest:
				s.mu.Unlock()
				return nil, nil, ErrConflict
			case e.done != nil:
				done := e.done
				s.mu.Unlock()
				select {
				case <-done:
					continue
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			case e.answered:
				a := Answer{Status: e.answer.Status, Body: append([]byte(nil), e.answer.Body...)}
				s.mu.Unlock()
				return nil, &a, nil
			}
			s.mu.Unlock()
			return nil, nil, ErrAmbiguous
		}
		r.AtMs = now
		e = &entry{digest: digest, atMs: now, claimAt: now, hint: r.Hint, done: make(chan struct{}), riding: riding}
		s.entries[k] = e
		if riding {
			s.mu.Unlock()
			return &Claim{s: s, k: k, e: e, tally: commits.From(ctx)}, nil, nil
		}
		n, err := s.writeLocked(r)
		s.mu.Unlock()
		if err == nil {
			err = s.waitSync(n)
		}
		if err != nil {
			s.mu.Lock()
			if s.entries[k] == e {
				delete(s.entries, k)
			}
			close(e.done)
			e.done = nil
			s.mu.Unlock()
			return nil, nil, err
		}
		tally := commits.From(ctx)
		tally.Add(1)
		return &Claim{s: s, k: k, e: e, hinted: r.Type == typeHinted, tally: tally}, nil, nil
	}
}

// Claim is a durable claim of one request that this process runs.
type Claim struct {
	s      *Store
	k      entryKey
	e      *entry
	hinted bool
	once   sync.Once
	tally  *commits.Counter // the claiming request's commit count
	ride   *commits.Ride    // a ClaimRiding claim's records
}

// Answer durably records the request's answer and wakes requests waiting
// on the same key. An answer no record can hold (a status outside
// 100..999, a body past MaxPayloadBytes) is refused and ends the claim as
// Abandon does: the key answers ErrAmbiguous from then on.
func (c *Claim) Answer(status int, body []byte) error {
	return c.answer(status, body, true)
}

// AnswerDerivable records the answer of a claim made with ClaimHinted
// without waiting for it to be durable: the next flush of the store (any
// later claim, answer or release, a compaction, or Close) makes it so. The
// caller vouches that, should the process end before then,
// Options.Derive answers the same from the claim's hint and state that is
// already durable; so the answer may be sent at once. Requests waiting on
// the same key are woken with it.
func (c *Claim) AnswerDerivable(status int, body []byte) error {
	if !c.hinted {
		return errors.New("idem: AnswerDerivable needs a hinted claim")
	}
	return c.answer(status, body, false)
}

func (c *Claim) answer(status int, body []byte, wait bool) error {
	r := record{Type: typeAnswer, Scope: c.k.scope, Key: c.k.key, Status: status, Body: body}
	if err := checkRecord(&r); err != nil {
		// The request ran, but its answer cannot be recorded: the key
		// is ambiguous, and the requests waiting on it are woken.
		c.Abandon()
		return err
	}
	return c.finish(&r, wait, func(e *entry) {
		e.answered = true
		e.answer = Answer{Status: status, Body: append([]byte(nil), body...)}
		e.atMs = r.AtMs
	})
}

// Abandon ends the claim without an answer, for a request whose outcome is
// unknown (it failed after it may have had an effect, and its answer could
// not be made durable): the key answers ErrAmbiguous from then on, in this
// process and after a restart, and the request never runs again.
func (c *Claim) Abandon() {
	c.once.Do(func() {
		s, e := c.s, c.e
		s.mu.Lock()
		defer s.mu.Unlock()
		close(e.done)
		e.done = nil
	})
}

// Release durably forgets the claim of a request that did not run, so its
// key may be used again.
func (c *Claim) Release() error {
	r := record{Type: typeRelease, Scope: c.k.scope, Key: c.k.key}
	return c.finish(&r, true, nil)
}

func (c *Claim) finish(r *record, wait bool, answered func(*entry)) error {
	err := errors.New("idem: claim already finished")
	c.once.Do(func() {
		s, e := c.s, c.e
		s.mu.Lock()
		defer s.mu.Unlock()
		defer func() {
			close(e.done)
			e.done = nil
		}()
		if e.riding && answered == nil {
			// A release of a claim nothing durable holds: forget it.
			if s.entries[c.k] == e {
				delete(s.entries, c.k)
			}
			err = nil
			return
		}
		if e.journaledAnswer && answered != nil {
			// The journal made the answer durable with the request's
			// last commit.
			err = nil
			return
		}
		// A release that cannot be written still forgets the claim in
		// memory: its request did not run, so a retry may run it, and the
		// rewrite that recovers from the failure drops the claim from the
		// file (until then, a restart finds it ambiguous).
		forget := func() {
			if answered == nil && s.entries[c.k] == e {
				delete(s.entries, c.k)
			}
		}
		if err = s.usableLocked(c.tally); err != nil {
			forget()
			return
		}
		r.AtMs = s.opts.Now().UnixMilli()
		if e.riding {
			// An answer the journal did not carry: the claim is written
			// first, in the same flush.
			e.riding = false
			if _, err = s.writeLocked(&record{Type: typeClaim, AtMs: e.claimAt, Scope: c.k.scope, Key: c.k.key, Digest: e.digest}); err != nil {
				if s.entries[c.k] == e {
					delete(s.entries, c.k)
				}
				return
			}
		}
		var n uint64
		if n, err = s.writeLocked(r); err != nil {
			forget()
			return
		}
		// The in-memory entry reflects every written record, so that a
		// compaction racing with this flush keeps it; waiters on e.done
		// see it only once it is durable.
		if answered != nil {
			answered(e)
			e.hint = nil
		} else {
			e.released = true
		}
		if wait {
			s.mu.Unlock()
			err = s.waitSync(n)
			s.mu.Lock()
			c.tally.Add(1)
		}
		if err != nil {
			forget()
			return
		}
		if e.released && s.entries[c.k] == e {
			delete(s.entries, c.k)
		}
		s.maybeCompactLocked(c.tally)
	})
	return err
}
