package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
)

// RequestClaim mirrors idem.Claim: a claim this process runs, committed
// (Claim, ClaimHinted) or riding the journal (ClaimRiding).
type RequestClaim struct {
	r      *Requests
	k      reqKey
	id     []byte
	done   chan struct{}
	hinted bool
	digest [32]byte
	once   sync.Once
	tally  *commits.Counter // the claiming request's commit count
	ride   *ride            // a riding claim's state
}

// ride is the state of a riding claim, which the journal's appends move
// on (under Journal.ridesMu).
type ride struct {
	claimAt    time.Time       // the node's time in its records' data
	claimData  json.RawMessage // its commits.ClaimKind record's data
	answerData json.RawMessage // its commits.AnswerKind record's data, once made
	answer     idem.Answer     // ... and the answer it stands for
	commits    *commits.Ride
	onDurable  func()
	// state: rideNew until an append carrying the claim record commits
	// (rideDurable) or ends with its outcome unknown (rideUnknown: it may
	// have committed).
	state    int
	answered bool // an append carrying the answer record committed it
}

const (
	rideNew = iota
	rideUnknown
	rideDurable
)

// Ride answers what the journal commits of a riding claim carry (nil for
// another claim).
func (c *RequestClaim) Ride() *commits.Ride {
	if c.ride == nil {
		return nil
	}
	return c.ride.commits
}

// Durable reports whether the claim may be durable: a riding claim once
// an append carrying its record committed or may have committed.
func (c *RequestClaim) Durable() bool {
	if c.ride == nil {
		return true
	}
	j := c.r.db.journal
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	return c.ride.state != rideNew
}

// Recorded answers the answer the journal committed for a riding claim,
// if it did.
func (c *RequestClaim) Recorded() (idem.Answer, bool) {
	if c.ride == nil {
		return idem.Answer{}, false
	}
	j := c.r.db.journal
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	if !c.ride.answered {
		return idem.Answer{}, false
	}
	return c.ride.answer, true
}

// rideState answers a riding claim's state and whether its answer was
// committed.
func (c *RequestClaim) rideState() (int, bool) {
	j := c.r.db.journal
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	return c.ride.state, c.ride.answered
}

// Answer commits the request's answer and wakes requests waiting on the
// same key. An answer no record can hold is refused and ends the claim as
// Abandon does: the key answers idem.ErrAmbiguous from then on.
func (c *RequestClaim) Answer(status int, body []byte) error {
	if status < 100 || status > 999 || len(body) > idem.MaxPayloadBytes-300 {
		// The request ran, but its answer cannot be recorded: the key
		// is ambiguous, and the requests waiting on it are woken.
		c.Abandon()
		return fmt.Errorf("pgstore: answer status %d or body of %d bytes out of range", status, len(body))
	}
	if body == nil {
		body = []byte{}
	}
	if c.ride != nil {
		switch state, answered := c.rideState(); {
		case answered:
			// The journal committed the answer with the turn's end.
			c.once.Do(c.finishRide)
			return nil
		case state == rideUnknown:
			// The claim may be durable without the turn's outcome: the
			// key stays ambiguous, on every node once the database
			// answers.
			c.once.Do(c.giveUp)
			return fmt.Errorf("pgstore: claim of %s/%s: %w", c.k.scope, c.k.key, ErrOutcomeUnknown)
		case state == rideNew:
			// No append carried the claim (the request ended before its
			// first commit): the claim row is written with its answer.
			return c.finish(true, `INSERT INTO brain_requests (scope, key, digest, hinted, claim_id, instance, status, body, claimed_at, at)
				VALUES ($1, $2, $6, false, $3, $7, $4, $5, now(), now())
				ON CONFLICT (scope, key) DO NOTHING`,
				int32(status), body, c.digest[:], c.r.db.instance)
		}
	}
	// The answer's time is the database's, never before its claim's.
	return c.finish(false, `UPDATE brain_requests SET status = $4, body = $5, at = greatest(now(), claimed_at)
		WHERE scope = $1 AND key = $2 AND claim_id = $3 AND status IS NULL`, int32(status), body)
}

// AnswerDerivable mirrors idem.Claim.AnswerDerivable: for a hinted claim,
// it commits the answer as Answer does.
func (c *RequestClaim) AnswerDerivable(status int, body []byte) error {
	if !c.hinted {
		return errors.New("pgstore: AnswerDerivable needs a hinted claim")
	}
	return c.Answer(status, body)
}

// Release durably forgets the claim of a request that did not run, so its
// key may be used again.
// A riding claim that no append carried is forgotten without a write; one
// that an append may have carried (its outcome unknown) is not released:
// the key stays ambiguous.
func (c *RequestClaim) Release() error {
	if c.ride != nil {
		switch state, _ := c.rideState(); state {
		case rideNew:
			c.once.Do(c.finishRide)
			return nil
		case rideUnknown:
			c.once.Do(c.giveUp)
			return fmt.Errorf("pgstore: claim of %s/%s not released: %w", c.k.scope, c.k.key, ErrOutcomeUnknown)
		}
	}
	return c.finish(true, `DELETE FROM brain_requests WHERE scope = $1 AND key = $2 AND claim_id = $3`)
}

// Abandon mirrors idem.Claim.Abandon: the claim row stays unanswered and
// is handed to no instance as soon as the database answers, so the key
// answers idem.ErrAmbiguous on every node from then on.
func (c *RequestClaim) Abandon() {
	c.once.Do(c.giveUp)
}

// giveUp ends the claim in this process, its row (if any) to be handed
// to no instance once the database answers.
func (c *RequestClaim) giveUp() {
	c.r.unsettle(c.k, c.id, false)
	c.finishRide()
}

// finishRide ends the claim in this process without a write.
func (c *RequestClaim) finishRide() {
	if c.ride != nil {
		c.r.db.journal.rideDone(c)
	}
	c.r.finishLocal(c.k, c.done)
}

// finish commits the claim's end, its answer or (release) its deletion.
// When that fails, the end is committed later (see unsettle).
func (c *RequestClaim) finish(release bool, sql string, more ...any) error {
	err := errors.New("pgstore: claim already finished")
	c.once.Do(func() {
		defer c.finishRide()
		held := true
		defer func() {
			if err != nil && held {
				c.r.unsettle(c.k, c.id, release)
			}
		}()
		if err = c.r.usable(); err != nil {
			return
		}
		ctx, cancel := c.r.db.opCtx(context.Background())
		defer cancel()
		args := append([]any{c.k.scope, []byte(c.k.key), c.id}, more...)
		op := &groupOp{ctx: ctx, key: "r" + c.k.scope + "\x00" + c.k.key, sql: sql, args: args, exec: true}
		sent, e := c.r.db.group.do(op)
		tag := op.tag
		if !sent {
			err = e
			return
		}
		if e != nil {
			err = classify("finish claim", e, true)
			return
		}
		c.tally.Add(1)
		if tag.RowsAffected() == 0 {
			held = false
			err = fmt.Errorf("pgstore: claim of %s/%s is no longer held", c.k.scope, c.k.key)
			return
		}
		err = nil
	})
	return err
}
