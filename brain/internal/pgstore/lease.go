package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/jackc/pgx/v5"
)

// Lease is this node's ownership of one session's activations.
type Lease struct {
	Session string
	// Epoch grows by one at every change of owner; appends are fenced on
	// it.
	Epoch int64
	// Deadline is the local time after which the node must consider the
	// lease lost unless renewed. It is measured from before the request
	// that took or renewed the lease was sent, so it never outlasts the
	// database's expires_at.
	Deadline time.Time
}

// Owner describes the holder of a session's lease.
type Owner struct {
	NodeID    string
	PublicURL string // empty when the node left the membership
	Epoch     int64
	Live      bool // the lease has not expired
}

func secs(d time.Duration) float64 { return d.Seconds() }

// AcquireLease takes the lease on session: when there is none, when it
// expired or was released, or when this node holds it (a restarted node
// under the same id). The epoch always grows, so appends prepared under an
// earlier epoch (a previous life of this node included) are refused.
// Another node's live lease answers an error wrapping ErrLeaseHeld. Of
// nodes racing for one expired lease, exactly one wins: the conditional
// upsert serializes on the lease row.
func (db *DB) AcquireLease(ctx context.Context, session string) (Lease, error) {
	if err := journal.CheckSession(session); err != nil {
		return Lease{}, err
	}
	// Close waits for an acquisition in flight, which gives back a lease
	// it took once Close began (Close's release of every lease may have
	// missed it): no lease of a closed node is left held.
	if !db.enter() {
		return Lease{}, fmt.Errorf("acquire lease: %w: %w", ErrUnavailable, ErrClosed)
	}
	defer db.wg.Done()
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	// The acquisition may wait for a lease row another transaction keeps
	// locked (up to lock_timeout): Close does not wait for that, but has
	// the statement cancelled, and the acquisition answers ErrClosed.
	c, err := db.send.acquire(ctx)
	if err != nil {
		return Lease{}, db.acquireFailed(classify("acquire lease", err, true))
	}
	sent := time.Now()
	var epoch int64
	// The session row carries the epoch too (appends are fenced on it):
	// updating it waits for an append in flight to commit, so the new
	// owner's recovery reads that append, and makes later appends of the
	// old owner fail. It is a second statement of the same (implicit)
	// transaction, sent in the same round trip, because it must see the
	// session row that a session's first append committed while the
	// first statement waited for it (that append share-locks the lease
	// row): a statement sees only what was committed when it started.
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO brain_leases AS l (session_id, node_id, epoch, expires_at)
			VALUES ($1, $2, 1, now() + make_interval(secs => $3))
			ON CONFLICT (session_id) DO UPDATE
			SET node_id = EXCLUDED.node_id, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
			WHERE l.expires_at <= now() OR l.node_id = EXCLUDED.node_id
			RETURNING epoch`, []byte(session), db.opts.NodeID, secs(db.opts.LeaseDuration))
	b.Queue(`UPDATE brain_sessions s SET epoch = l.epoch FROM brain_leases l
			WHERE s.session_id = $1 AND l.session_id = $1 AND l.node_id = $2 AND l.epoch > s.epoch`,
		[]byte(session), db.opts.NodeID)
	if db.ops.Err() != nil {
		// Close began since: nothing is sent.
		c.Release()
		return Lease{}, db.acquireFailed(fmt.Errorf("acquire lease: %w", db.ops.Err()))
	}
	end := db.cancelOnClose(c, cancel)
	br := c.SendBatch(ctx, b)
	err = br.QueryRow().Scan(&epoch)
	if _, uerr := br.Exec(); err == nil {
		err = uerr
	}
	if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) && cerr != nil {
		err = cerr
	}
	if end() {
		db.closeConn(c)
	} else {
		c.Release()
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("%w: session %s", ErrLeaseHeld, session)
	}
	if err != nil {
		return Lease{}, db.acquireFailed(classify("acquire lease", err, true))
	}
	l := Lease{Session: session, Epoch: epoch, Deadline: sent.Add(db.opts.LeaseDuration)}
	db.leaseMu.Lock()
	// Of this node's acquisitions racing for one session, each raised the
	// epoch: the highest is the database's, whichever answer came last.
	if cur, ok := db.leases[session]; !ok || cur.Epoch <= l.Epoch {
		db.leases[session] = l
	}
	db.leaseMu.Unlock()
	if db.isClosing() {
		_ = db.ReleaseLease(context.WithoutCancel(ctx), l) // an unreleased lease expires
		return Lease{}, fmt.Errorf("acquire lease: %w: %w", ErrUnavailable, ErrClosed)
	}
	return l, nil
}

// acquireFailed answers the error of an acquisition that failed: once
// Close began (which may have cancelled it), ErrUnavailable wrapping
// ErrClosed and err.
func (db *DB) acquireFailed(err error) error {
	if db.isClosing() {
		return fmt.Errorf("acquire lease: %w: %w (%w)", ErrUnavailable, ErrClosed, err)
	}
	return err
}

// RenewLease extends a lease this node still holds. A lease that expired
// or changed owner is not renewed (ErrNotOwner): the node must stop the
// session's activations at once. A lease row another transaction keeps
// locked (a node stopped while it tried to take the lease) is not
// waited for: the renewal is tried again each renewRetry while the
// lease's deadline allows, and the lease is answered lost (ErrNotOwner)
// once it passed. A statement waits on the database as renewWait says
// for the time left; a failed one answers its error and keeps the lease.
func (db *DB) RenewLease(ctx context.Context, l Lease) (Lease, error) {
	db.leaseMu.Lock()
	if cur, ok := db.leases[l.Session]; ok && cur.Epoch == l.Epoch && cur.Deadline.After(l.Deadline) {
		l.Deadline = cur.Deadline // renewed by keepLeases meanwhile
	}
	db.leaseMu.Unlock()
	for {
		left := time.Until(l.Deadline)
		if left <= 0 {
			db.forget(l)
			return l, fmt.Errorf("%w: session %s epoch %d: lease ran out", ErrNotOwner, l.Session, l.Epoch)
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, db.renewWait(left))
		refused, busy, err := db.renewLeases(rctx, []Lease{l})
		cancel()
		switch {
		case err != nil:
			db.renewFailed()
			return l, err
		case len(refused) > 0:
			return l, fmt.Errorf("%w: session %s epoch %d", ErrNotOwner, l.Session, l.Epoch)
		case len(busy) == 0:
			l.Deadline = sent.Add(db.opts.LeaseDuration)
			return l, nil
		}
		// Its row is locked: try again while the lease lasts.
		t := time.NewTimer(min(db.renewRetry(), max(time.Until(l.Deadline), 0)))
		select {
		case <-ctx.Done():
			t.Stop()
			return l, fmt.Errorf("pgstore: renew lease: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// renewBatch bounds how many leases one renewal statement extends.
const renewBatch = 512

// renewLeases extends the leases ls, which this node holds, in one
// statement, taking their rows' locks in the order of ls. A row another
// transaction has locked is skipped rather than waited for: one lease
// row that a stopped process keeps locked (a node stopped while it tried
// to take the lease) must not cost the node every other lease of the
// statement. It answers the leases the database refused to renew
// (expired, or changed owner), which it forgets: their sessions must
// stop at once; and the leases it skipped, still held but not renewed,
// to be tried again. On an error nothing was renewed.
func (db *DB) renewLeases(ctx context.Context, ls []Lease) (refused, busy []Lease, err error) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	sent := time.Now()
	ids, epochs := leaseColumns(ls)
	// The last part reads the lease rows as they were when the statement
	// started: a row held then and not renewed was skipped, locked.
	rows, err := db.upkeep.Query(ctx, `WITH h AS (
			SELECT * FROM unnest($1::bytea[], $2::bigint[]) AS h(session_id, epoch)
		), held AS (
			SELECT l.session_id FROM brain_leases l
			JOIN h ON l.session_id = h.session_id AND l.epoch = h.epoch
			WHERE l.node_id = $3 AND l.expires_at > now()
			ORDER BY l.session_id
			FOR NO KEY UPDATE OF l SKIP LOCKED
		), renewed AS (
			UPDATE brain_leases l SET expires_at = now() + make_interval(secs => $4)
			FROM held WHERE l.session_id = held.session_id
			RETURNING l.session_id
		)
		SELECT session_id, true FROM renewed
		UNION ALL
		SELECT l.session_id, false FROM brain_leases l
		JOIN h ON l.session_id = h.session_id AND l.epoch = h.epoch
		WHERE l.node_id = $3 AND l.expires_at > now()
			AND NOT EXISTS (SELECT 1 FROM renewed r WHERE r.session_id = l.session_id)`,
		ids, epochs, db.opts.NodeID, secs(db.opts.LeaseDuration))
	if err != nil {
		return nil, nil, classify("renew leases", err, true)
	}
	// true: renewed; false: skipped, locked.
	kept := make(map[string]bool, len(ls))
	var id []byte
	var renewed bool
	_, err = pgx.ForEachRow(rows, []any{&id, &renewed}, func() error {
		kept[string(id)] = renewed
		return nil
	})
	if err != nil {
		return nil, nil, classify("renew leases", err, true)
	}
	deadline := sent.Add(db.opts.LeaseDuration)
	db.leaseMu.Lock()
	for _, l := range ls {
		cur, ok := db.leases[l.Session]
		mine := ok && cur.Epoch == l.Epoch
		renewed, held := kept[l.Session]
		switch {
		case renewed && mine:
			cur.Deadline = deadline
			db.leases[l.Session] = cur
		case held && !renewed:
			busy = append(busy, l)
		case !held:
			if mine {
				delete(db.leases, l.Session)
			}
			refused = append(refused, l)
		}
	}
	db.leaseMu.Unlock()
	return refused, busy, nil
}

// ReleaseLease gives the lease up at once (graceful drain), so another
// node can take the session without waiting for it to expire.
func (db *DB) ReleaseLease(ctx context.Context, l Lease) error {
	db.forget(l)
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	_, err := db.send.Exec(ctx, `UPDATE brain_leases SET expires_at = '-infinity'
		WHERE session_id = $1 AND node_id = $2 AND epoch = $3`, []byte(l.Session), db.opts.NodeID, l.Epoch)
	return classify("release lease", err, true)
}

func (db *DB) forget(l Lease) {
	db.leaseMu.Lock()
	if cur, ok := db.leases[l.Session]; ok && cur.Epoch == l.Epoch {
		delete(db.leases, l.Session)
	}
	db.leaseMu.Unlock()
}

// heldLease answers the live lease this node holds on session.
func (db *DB) heldLease(session string) (Lease, bool) {
	db.leaseMu.Lock()
	l, ok := db.leases[session]
	db.leaseMu.Unlock()
	if ok && time.Now().After(l.Deadline) {
		return l, false
	}
	return l, ok
}

// releaseAll gives every lease this node holds back at once (Close), up
// to renewBatch leases per statement in the order of their sessions, as
// they are renewed. It stops when ctx ends; a lease left unreleased then
// expires.
func (db *DB) releaseAll(ctx context.Context) {
	db.leaseMu.Lock()
	held := make([]Lease, 0, len(db.leases))
	for _, l := range db.leases {
		held = append(held, l)
	}
	clear(db.leases)
	db.leaseMu.Unlock()
	slices.SortFunc(held, func(a, b Lease) int { return strings.Compare(a.Session, b.Session) })
	for len(held) > 0 && ctx.Err() == nil {
		n := min(len(held), renewBatch)
		_ = db.releaseLeases(ctx, held[:n]) // an unreleased lease expires
		held = held[n:]
	}
}

// leaseColumns answers the session ids and epochs of ls, as the arrays a
// statement over many leases takes.
func leaseColumns(ls []Lease) (ids [][]byte, epochs []int64) {
	ids = make([][]byte, len(ls))
	epochs = make([]int64, len(ls))
	for i, l := range ls {
		ids[i], epochs[i] = []byte(l.Session), l.Epoch
	}
	return ids, epochs
}

// releaseLeases expires the leases ls, which this node held, in one
// statement, taking their rows' locks in the order of ls.
func (db *DB) releaseLeases(ctx context.Context, ls []Lease) error {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	ids, epochs := leaseColumns(ls)
	_, err := db.upkeep.Exec(ctx, `WITH held AS (
			SELECT l.session_id FROM brain_leases l
			JOIN unnest($1::bytea[], $2::bigint[]) AS h(session_id, epoch)
				ON l.session_id = h.session_id AND l.epoch = h.epoch
			WHERE l.node_id = $3
			ORDER BY l.session_id
			FOR NO KEY UPDATE OF l)
		UPDATE brain_leases l SET expires_at = '-infinity'
		FROM held WHERE l.session_id = held.session_id`, ids, epochs, db.opts.NodeID)
	return classify("release leases", err, true)
}

// LeaseOwner answers who holds session's lease, for forwarding a write to
// the owner; pgx.ErrNoRows-free: a session never leased answers a zero
// Owner.
func (db *DB) LeaseOwner(ctx context.Context, session string) (Owner, error) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	var o Owner
	var url *string
	err := db.pool.QueryRow(ctx, `SELECT l.node_id, n.public_url, l.epoch, l.expires_at > now()
		FROM brain_leases l LEFT JOIN brain_nodes n ON n.node_id = l.node_id AND n.expires_at > now()
		WHERE l.session_id = $1`, []byte(session)).Scan(&o.NodeID, &url, &o.Epoch, &o.Live)
	if errors.Is(err, pgx.ErrNoRows) {
		return Owner{}, nil
	}
	if err != nil {
		return Owner{}, classify("lease owner", err, false)
	}
	if url != nil {
		o.PublicURL = *url
	}
	return o, nil
}

// NodeGone waits until no live member of the cluster has the public URL
// url (its heartbeat ran out: the node stopped or died) and answers nil,
// or answers ctx's error. It asks the database each third of the lease
// length; a failed query is asked again at the next tick.
func (db *DB) NodeGone(ctx context.Context, url string) error {
	t := time.NewTicker(db.opts.LeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		qctx, cancel := db.opCtx(ctx)
		var live bool
		err := db.pool.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM brain_nodes WHERE public_url = $1 AND expires_at > now())`, url).Scan(&live)
		cancel()
		if err == nil && !live {
			return nil
		}
	}
}

// Member is one live node of the cluster.
type Member struct {
	NodeID    string
	PublicURL string
}

// Members lists the live nodes (those whose heartbeat has not expired).
func (db *DB) Members(ctx context.Context) ([]Member, error) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	rows, err := db.pool.Query(ctx, `SELECT node_id, public_url FROM brain_nodes WHERE expires_at > now() ORDER BY node_id`)
	if err != nil {
		return nil, classify("members", err, false)
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Member, error) {
		var m Member
		err := r.Scan(&m.NodeID, &m.PublicURL)
		return m, err
	})
	return ms, classify("members", err, false)
}

// heartbeat registers this node (and this process, by instance) as a
// live member until now + LeaseDuration. The node's row is taken over
// only from this process or from one whose membership ran out: while
// another process is a live member under the same id, nothing is written
// and the error wraps errIDHeld.
func (db *DB) heartbeat(ctx context.Context) error {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	tag, err := db.upkeep.Exec(ctx, `INSERT INTO brain_nodes (node_id, instance, public_url, joined_at, expires_at)
		VALUES ($1, $2, $3, now(), now() + make_interval(secs => $4))
		ON CONFLICT (node_id) DO UPDATE SET instance = EXCLUDED.instance, public_url = EXCLUDED.public_url,
			joined_at = CASE WHEN brain_nodes.instance = EXCLUDED.instance THEN brain_nodes.joined_at ELSE now() END,
			expires_at = EXCLUDED.expires_at
		WHERE brain_nodes.instance = EXCLUDED.instance OR brain_nodes.expires_at <= now()`,
		db.opts.NodeID, db.instance, db.opts.PublicURL, secs(db.opts.LeaseDuration))
	if err != nil {
		return classify("heartbeat", err, true)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("heartbeat: node id %q: %w", db.opts.NodeID, errIDHeld)
	}
	return nil
}

// renewing calls renew each third of the lease length until ctx ends,
// with the time the next call is due. After a call that answered false
// (a statement failed: the database was unreachable, restarting or
// refused it), the next comes renewRetry after it started rather than a
// third of the lease length: a database that is back well within a lease
// length then renews what was last renewed before it failed, instead of
// finding it run out at the next third.
func (db *DB) renewing(ctx context.Context, renew func(ctx context.Context, due time.Time) bool) {
	every := db.opts.LeaseDuration / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		wait := every
		if !renew(ctx, start.Add(every)) {
			wait = db.renewRetry()
		}
		t.Reset(max(wait-time.Since(start), 0))
	}
}

// renewRetry is how long after a failed renewal of leases or membership
// the next is tried.
func (db *DB) renewRetry() time.Duration { return db.opts.LeaseDuration / 15 }

// renewWait answers how long a renewal of something that runs out in
// left waits on the database: half of left, or a quarter of OpTimeout
// (as long as a healthy node's statement may wait for a lock) if that is
// more, but never more than left. A renewal not answered by then is
// given up, as is one that would answer too late to keep what it
// renews. Its connection may have died without a word (a network that
// dropped it sends no reset: the statement waits for an answer that
// never comes), and the time left leaves room to try again on a new
// connection.
func (db *DB) renewWait(left time.Duration) time.Duration {
	return min(max(left/2, db.opts.OpTimeout/4), left)
}

// renewFailed closes the idle connections of the upkeep pool (and those
// in use once they are given back) after a renewal failed: another
// connection opened before it may be as dead as the one that failed, and
// the retry must not wait on it in turn.
func (db *DB) renewFailed() { db.upkeep.Reset() }

// keepMembership renews this node's membership each third of the lease
// length (a failed heartbeat is tried again after renewRetry; one waits
// on the database as renewWait says for the membership's expiry), then
// ends stalled connections (also after a failed heartbeat: a stalled
// connection may hold the node's row) and, after a heartbeat, sweeps
// orphaned secrets, each given no more than the time left until the next
// heartbeat is due, so that neither delays it.
func (db *DB) keepMembership(ctx context.Context) {
	swept := time.Now()
	until := time.Now().Add(db.opts.LeaseDuration) // Open's heartbeat
	db.renewing(ctx, func(ctx context.Context, due time.Time) bool {
		sent := time.Now()
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if left := until.Sub(sent); left > 0 {
			hctx, cancel = context.WithTimeout(ctx, db.renewWait(left))
		}
		err := db.heartbeat(hctx)
		cancel()
		if err != nil {
			if !errors.Is(err, errIDHeld) {
				db.renewFailed()
			}
			due = time.Now().Add(db.renewRetry())
		} else {
			until = sent.Add(db.opts.LeaseDuration)
		}
		ctx, cancel = context.WithDeadline(ctx, due)
		defer cancel()
		db.reapStalled(ctx)
		if err == nil && db.sweepDue(&swept, time.Now()) {
			db.sweepSecrets(ctx) // a failure is retried at the next sweep
		}
		return err == nil
	})
}

// reapStalled ends the connections of nodes (by the application name
// of this node's) that stopped in the middle of sending a statement or a
// pipelined batch (SIGSTOP, a hung host, a lost network) more than twice
// OpTimeout ago. The server keeps such a transaction open, with the row
// locks its first statements took, while it waits for the rest (state
// active, waiting on ClientRead): neither
// idle_in_transaction_session_timeout nor statement_timeout ends it, so
// without this the sessions and keys it locked could not be taken over
// for as long as the stopped process keeps its connection. A node sends
// a statement or batch whole within OpTimeout or gives its connection
// up, so a transaction waiting on its client that long is never a live
// node's: ending it commits nothing. Only connections of this node's
// role are ended (those it may end); an error is retried at the next
// renewal.
func (db *DB) reapStalled(ctx context.Context) {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	db.upkeep.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND application_name = current_setting('application_name') AND usename = current_user
			AND state = 'active' AND wait_event_type = 'Client' AND wait_event = 'ClientRead'
			AND xact_start < now() - make_interval(secs => $1)`, secs(2*db.opts.OpTimeout))
}

func (db *DB) leave(ctx context.Context) {
	db.upkeep.Exec(ctx, `DELETE FROM brain_nodes WHERE node_id = $1 AND instance = $2`, db.opts.NodeID, db.instance)
}

// instanceLive reports whether the process instance is a live member.
func (db *DB) instanceLive(ctx context.Context, instance string) (bool, error) {
	if instance == db.instance {
		return true, nil
	}
	var live bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM brain_nodes WHERE instance = $1 AND expires_at > now())`, instance).Scan(&live)
	return live, classify("membership", err, false)
}
