package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/jackc/pgx/v5"
)

// Requests keeps idempotency claims and answers in brain_requests with the
// rules of package idem, shared by every node: a retry on any node of a
// request answered on another replays the answer; a different request
// under the same key is idem.ErrConflict; a claim still running in a live
// process (this one or another node's) is awaited; a claim whose process
// ended without answering is idem.ErrAmbiguous, for good (retention
// forgets answered entries only).
// Every Claim, Answer and Release is committed before it returns.
//
// It implements idem.Requests, with idem's Answer type and errors, so the
// HTTP layer serves it as it serves the file store. The one difference: a hinted claim
// left unanswered by a process that ended is ambiguous (as an idem.Store
// opened without Derive), because AnswerDerivable here commits the answer
// before it returns, so only a claim whose request never got that far is
// left unanswered.
//
// The retention counts from an answer's time as in the file store, on
// the database's clock alone: a row's claimed_at and at are stamped with
// the database's now(), and every expiry (a claim over an expired answer,
// the purge, Len) compares them with the database's now(), so that a
// node whose wall clock runs ahead never forgets another node's answer
// early. An answer's time (its row's at, and its answer record's at_ms)
// is never before its claim's: when a clock stepped back between the
// two, the answer takes the claim's time, as in the file store. Expired
// answers are purged in the background at most once an hour, in short
// statements that pass over rows other transactions hold (see purge).
//
// A synchronous send's claim rides the session's journal (ClaimRiding):
// its row is inserted by the append that carries the turn's first
// records, and its answer written by the append that carries the turn's
// end, each in the append's own statement and only if the append's
// compare-and-set and fence pass (see the package doc, "Claims that ride
// the journal").
type Requests struct {
	db   *DB
	opts idem.Options

	mu        sync.Mutex
	closed    bool
	running   map[reqKey]chan struct{} // claims this process is running
	pending   map[reqKey]unsettled     // claims it no longer runs, whose end is not committed (requests_settle.go)
	settling  bool                     // a settler commits them
	lastPurge time.Time
	purging   bool // a purge runs
}

var (
	_ idem.Requests = (*Requests)(nil)
	_ idem.Rider    = (*Requests)(nil)
)

type reqKey struct{ scope, key string }

// purgeEvery is how often expired entries are deleted.
const purgeEvery = time.Hour

// purgeBatch bounds the expired entries one statement of the purge
// deletes.
const purgeBatch = 1000

// Requests answers the idempotency store. opts.Retention is used as by
// idem.Open, counted on the database's clock; opts.Now stamps the journal
// records of riding claims and paces the purge (opts.Derive is not used:
// see Requests).
func (db *DB) Requests(opts *idem.Options) *Requests {
	r := &Requests{db: db, running: map[reqKey]chan struct{}{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	return r
}

func checkClaim(scope, key string, hint []byte, hinted bool) error {
	if len(scope) == 0 || len(scope) > idem.MaxScopeBytes {
		return fmt.Errorf("pgstore: scope must be 1..%d bytes", idem.MaxScopeBytes)
	}
	if len(key) == 0 || len(key) > idem.MaxKeyBytes {
		return fmt.Errorf("%w: key must be 1..%d bytes", idem.ErrInvalidKey, idem.MaxKeyBytes)
	}
	if hinted && (len(hint) == 0 || len(hint) > idem.MaxHintBytes) {
		return fmt.Errorf("pgstore: hint must be 1..%d bytes", idem.MaxHintBytes)
	}
	return nil
}

// Claim mirrors idem.Store.Claim.
func (r *Requests) Claim(ctx context.Context, scope, key string, digest [32]byte) (idem.Claimed, *idem.Answer, error) {
	return r.claim(ctx, scope, key, digest, nil, false)
}

// ClaimHinted mirrors idem.Store.ClaimHinted. The hint is checked but not
// kept (see Requests).
func (r *Requests) ClaimHinted(ctx context.Context, scope, key string, digest [32]byte, hint []byte) (idem.Claimed, *idem.Answer, error) {
	return r.claim(ctx, scope, key, digest, hint, true)
}

func (r *Requests) claim(ctx context.Context, scope, key string, digest [32]byte, hint []byte, hinted bool) (idem.Claimed, *idem.Answer, error) {
	if err := checkClaim(scope, key, hint, hinted); err != nil {
		return nil, nil, err
	}
	k := reqKey{scope, key}
	c, a, err := r.attempt(ctx, func() (*RequestClaim, *idem.Answer, <-chan time.Time, error) {
		return r.try(ctx, k, digest, hinted)
	})
	if c == nil {
		return nil, a, err
	}
	c.tally = commits.From(ctx)
	c.tally.Add(1)
	return c, nil, nil
}

// attempt calls try until it claims the key, answers or fails, waiting
// between calls on what try names, or polling with a growing pause while
// another live process runs the key (a nil wait).
func (r *Requests) attempt(ctx context.Context, try func() (*RequestClaim, *idem.Answer, <-chan time.Time, error)) (*RequestClaim, *idem.Answer, error) {
	pause := 10 * time.Millisecond
	for {
		if err := r.usable(); err != nil {
			return nil, nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		r.maybePurge()
		c, a, wait, err := try()
		if c != nil || a != nil || err != nil {
			return c, a, err
		}
		if wait == nil {
			t := time.NewTimer(pause)
			pause = min(2*pause, 250*time.Millisecond)
			wait = t.C
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// try makes one attempt: a new claim, a recorded answer, an error, or
// something to wait on (nil: poll) while another claim runs.
func (r *Requests) try(ctx context.Context, k reqKey, digest [32]byte, hinted bool) (*RequestClaim, *idem.Answer, <-chan time.Time, error) {
	if err := r.settle(ctx, k); err != nil {
		return nil, nil, nil, err
	}
	octx, cancel := r.db.opCtx(ctx)
	defer cancel()
	id := make([]byte, 16)
	rand.Read(id)
	// Register before committing, so that a same-process waiter that sees
	// the row also finds the channel.
	done, mine := r.register(k)
	if mine {
		return nil, nil, r.waitChan(done), nil
	}
	registered := true
	defer func() {
		if registered {
			r.finishLocal(k, done)
		}
	}()
	var got []byte
	sent, err := r.db.group.do(&groupOp{ctx: octx, key: "r" + k.scope + "\x00" + k.key, sql: `INSERT INTO brain_requests AS r (scope, key, digest, hinted, claim_id, instance, claimed_at, at)
		VALUES ($1, $2, $3, $4, $5, $6, now(), now())
		ON CONFLICT (scope, key) DO UPDATE SET digest = EXCLUDED.digest, hinted = EXCLUDED.hinted,
			claim_id = EXCLUDED.claim_id, instance = EXCLUDED.instance, status = NULL, body = NULL,
			claimed_at = EXCLUDED.claimed_at, at = EXCLUDED.at
		WHERE $7::bigint > 0 AND r.status IS NOT NULL AND r.at < now() - make_interval(secs => $7::bigint / 1000.0)
		RETURNING claim_id`,
		args: []any{k.scope, []byte(k.key), digest[:], hinted, id, r.db.instance, r.opts.Retention.Milliseconds()},
		scan: func(row pgx.Row) error { return row.Scan(&got) }})
	if !sent {
		if ctx.Err() == nil {
			// The operation's own deadline ran out in the group commit's
			// queue: the database is slow, and nothing was sent.
			err = fmt.Errorf("claim: %w: %w", ErrUnavailable, err)
		}
		return nil, nil, nil, err
	}
	if err == nil {
		registered = false
		return &RequestClaim{r: r, k: k, id: id, done: done, hinted: hinted}, nil, nil, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		err = classify("claim", err, true)
		if errors.Is(err, ErrOutcomeUnknown) {
			// The claim may have committed, and its request does not run.
			r.unsettle(k, id, true)
		}
		return nil, nil, nil, err
	}
	var stored []byte
	var status *int32
	var body []byte
	var instance string
	err = r.db.pool.QueryRow(octx, `SELECT digest, status, body, instance FROM brain_requests WHERE scope = $1 AND key = $2`,
		k.scope, []byte(k.key)).Scan(&stored, &status, &body, &instance)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, closedChan(), nil // released meanwhile: try again
	}
	if err != nil {
		return nil, nil, nil, classify("claim", err, false)
	}
	switch {
	case string(stored) != string(digest[:]):
		return nil, nil, nil, idem.ErrConflict
	case status != nil:
		ans, err := storedAnswer(k, *status, body)
		return nil, ans, nil, err
	case instance == r.db.instance:
		// This process claimed it and is no longer running it: its answer
		// was never recorded.
		return nil, nil, nil, idem.ErrAmbiguous
	}
	live, err := r.db.instanceLive(octx, instance)
	if err != nil {
		return nil, nil, nil, err
	}
	if !live {
		return nil, nil, nil, idem.ErrAmbiguous
	}
	return nil, nil, nil, nil
}

// answerTime answers the time of an answer record made now to a claim
// made at claimAt: never before claimAt, so that a wall clock stepped
// back between the two does not stamp the answer record before its claim
// record (as the file store's answerAt).
func answerTime(now, claimAt time.Time) time.Time {
	if now.Before(claimAt) {
		return claimAt
	}
	return now
}

func closedChan() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}

func (r *Requests) waitChan(done chan struct{}) <-chan time.Time {
	c := make(chan time.Time, 1)
	go func() {
		<-done
		c <- time.Time{}
	}()
	return c
}

// ClaimRiding mirrors idem.Store.ClaimRiding: it claims (scope, key) in
// this process and writes nothing. The claim's row is inserted by the
// journal append that carries the claim record (Ride().Claim), in the
// same statement and only if that append commits; the answer's by the
// append that carries the answer record. Two nodes that race for one key
// both pass this check; the second append to insert the row fails with
// nothing committed (ErrUnavailable), its claim released.
func (r *Requests) ClaimRiding(ctx context.Context, scope, key string, digest [32]byte,
	answer func(v any, err error) (status int, body []byte, ok bool), onDurable func()) (idem.RidingClaim, *idem.Answer, error) {
	if err := checkClaim(scope, key, nil, false); err != nil {
		return nil, nil, err
	}
	k := reqKey{scope, key}
	c, a, err := r.attempt(ctx, func() (*RequestClaim, *idem.Answer, <-chan time.Time, error) {
		return r.tryRiding(ctx, k, digest)
	})
	if c == nil {
		return nil, a, err
	}
	c.tally = commits.From(ctx)
	c.ride.onDurable = onDurable
	c.ride.claimData = idem.ClaimRecord(scope, key, digest, c.ride.claimAt.UnixMilli())
	c.ride.commits = &commits.Ride{Claim: c.ride.claimData, Answer: func(v any, err error) json.RawMessage {
		status, body, ok := answer(v, err)
		if !ok {
			return nil
		}
		at := answerTime(r.opts.Now(), c.ride.claimAt)
		data := idem.AnswerRecord(scope, key, at.UnixMilli(), status, body)
		if body == nil {
			body = []byte{}
		}
		r.db.journal.rideAnswer(c, data, idem.Answer{Status: status, Body: body})
		return data
	}}
	r.db.journal.rideClaim(c)
	return c, nil, nil
}

// register records that this process runs a claim of k, closing done
// when it ends; mine reports instead that a claim of k this process
// already runs holds it (wait on done).
func (r *Requests) register(k reqKey) (done chan struct{}, mine bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if done, mine = r.running[k]; !mine {
		done = make(chan struct{})
		r.running[k] = done
	}
	return done, mine
}

// tryRiding is try for a riding claim: it reads the key's row and claims
// the key in this process when there is none (an expired one is deleted
// first).
func (r *Requests) tryRiding(ctx context.Context, k reqKey, digest [32]byte) (*RequestClaim, *idem.Answer, <-chan time.Time, error) {
	if err := r.settle(ctx, k); err != nil {
		return nil, nil, nil, err
	}
	octx, cancel := r.db.opCtx(ctx)
	defer cancel()
	done, mine := r.register(k)
	if mine {
		return nil, nil, r.waitChan(done), nil
	}
	registered := true
	defer func() {
		if registered {
			r.finishLocal(k, done)
		}
	}()
	now := r.opts.Now()
	row, found, err := r.db.reads.read(&keyRead{ctx: octx, scope: k.scope, key: []byte(k.key), retention: r.opts.Retention.Milliseconds()})
	stored, status, body, instance, expired := row.digest, row.status, row.body, row.instance, row.expired
	switch {
	case err == nil && !found:
	case err != nil:
		return nil, nil, nil, classify("claim", err, false)
	case expired:
		// Forgotten, as an expired entry is: the key runs anew.
		_, err := r.db.send.Exec(octx, `DELETE FROM brain_requests WHERE scope = $1 AND key = $2
			AND status IS NOT NULL AND at < now() - make_interval(secs => $3::bigint / 1000.0)`,
			k.scope, []byte(k.key), r.opts.Retention.Milliseconds())
		if err != nil {
			return nil, nil, nil, classify("claim", err, true)
		}
		commits.From(ctx).Add(1)
		return nil, nil, closedChan(), nil
	case string(stored) != string(digest[:]):
		return nil, nil, nil, idem.ErrConflict
	case status != nil:
		ans, err := storedAnswer(k, *status, body)
		return nil, ans, nil, err
	case instance == r.db.instance:
		return nil, nil, nil, idem.ErrAmbiguous
	default:
		live, err := r.db.instanceLive(octx, instance)
		if err != nil {
			return nil, nil, nil, err
		}
		if !live {
			return nil, nil, nil, idem.ErrAmbiguous
		}
		return nil, nil, nil, nil
	}
	id := make([]byte, 16)
	rand.Read(id)
	registered = false
	return &RequestClaim{r: r, k: k, id: id, done: done, digest: digest,
		ride: &ride{claimAt: time.UnixMilli(now.UnixMilli())}}, nil, nil, nil
}

func (r *Requests) finishLocal(k reqKey, done chan struct{}) {
	r.mu.Lock()
	if r.running[k] == done {
		delete(r.running, k)
	}
	r.mu.Unlock()
	close(done)
}

func (r *Requests) usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return idem.ErrClosed
	}
	return nil
}

// maybePurge starts a purge of expired entries (see purge), at most once
// per purgeEvery, in the background: the claim that finds it due does not
// wait for it.
func (r *Requests) maybePurge() {
	if r.opts.Retention <= 0 {
		return
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.purging || now.Sub(r.lastPurge) < purgeEvery {
		return
	}
	r.purging = r.db.goBackground(func() {
		r.purge(r.db.bg)
		r.mu.Lock()
		r.purging = false
		r.mu.Unlock()
	})
	if r.purging {
		r.lastPurge = now
	}
}

// purge deletes the expired entries, purgeBatch per statement, each
// committed on its own, until a statement finds fewer or fails (the
// next purge tries again). A row another transaction holds is passed
// over (SKIP LOCKED) rather than waited for: one key a stopped process
// keeps locked costs the purge that key alone, and every statement stays
// short whatever the number of entries to forget.
func (r *Requests) purge(ctx context.Context) {
	for ctx.Err() == nil {
		octx, cancel := r.db.opCtx(ctx)
		tag, err := r.db.pool.Exec(octx, `DELETE FROM brain_requests q USING (
				SELECT scope, key FROM brain_requests
				WHERE status IS NOT NULL AND at < now() - make_interval(secs => $1::bigint / 1000.0)
				LIMIT $2 FOR UPDATE SKIP LOCKED) e
			WHERE q.scope = e.scope AND q.key = e.key`, r.opts.Retention.Milliseconds(), purgeBatch)
		cancel()
		if err != nil || tag.RowsAffected() < purgeBatch {
			return
		}
	}
}

// Len mirrors idem.Store.Len: the entries (claimed or answered) within
// retention; -1 when the database cannot be read.
func (r *Requests) Len() int {
	ctx, cancel := r.db.opCtx(context.Background())
	defer cancel()
	var n int
	err := r.db.pool.QueryRow(ctx, `SELECT count(*) FROM brain_requests WHERE $1::bigint <= 0 OR status IS NULL OR at >= now() - make_interval(secs => $1::bigint / 1000.0)`,
		r.opts.Retention.Milliseconds()).Scan(&n)
	if err != nil {
		return -1
	}
	return n
}

// Close mirrors idem.Store.Close; the DB stays open.
func (r *Requests) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// storedAnswer answers the answer of k's row, refusing as idem.ErrDamaged
// a status that Answer could not have recorded (a row damaged in the
// database): replayed, it would be written as an HTTP status, which the
// HTTP server refuses by failing the handler.
func storedAnswer(k reqKey, status int32, body []byte) (*idem.Answer, error) {
	if status < 100 || status > 999 {
		return nil, fmt.Errorf("pgstore: answer of %s key %q: status %d: %w", k.scope, k.key, status, idem.ErrDamaged)
	}
	if body == nil {
		body = []byte{}
	}
	return &idem.Answer{Status: int(status), Body: body}, nil
}
