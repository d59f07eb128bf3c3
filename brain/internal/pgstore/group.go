package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Group commit: the one-statement writes of many sessions (appends,
// idempotency claims and answers) that are waiting at the same moment are
// sent as one pipelined batch, which PostgreSQL runs as one implicit
// transaction: one round trip and one commit (one WAL flush) for all of
// them. Each statement keeps its own result, so a session fenced out or
// in conflict fails alone while the others commit. A statement that
// fails on the server aborts the whole transaction, nothing of it is
// committed, and every statement of the batch is then run again on its
// own, as without grouping (those of distinct keys at once), except one
// that failed waiting lock_timeout for a lock, which answers that failure
// at once, as do the statements of its key after it. A connection lost
// during the batch, or an answer that does not say the transaction was
// rolled back (see uncertain), leaves every statement's outcome unknown,
// and none is run again.
// synchronous_commit is untouched: each statement returns only after the
// commit that carries it is flushed.

// Bounds of group commit. groupInFlight batches run at once, each on a
// pooled connection; while they run, new writes queue and go together in
// the next batch. groupMax bounds one batch.
const (
	groupInFlight = 2
	groupMax      = 128
	// groupRerun bounds the statements of a rolled-back batch that run
	// again at once, each on a pooled connection.
	groupRerun = 8
)

// groupOp is one statement to commit in a group.
type groupOp struct {
	ctx  context.Context
	key  string // what the statement locks: a batch runs in key order
	sql  string
	args []any
	exec bool      // run as Exec (tag) rather than QueryRow (scan)
	app  *appendOp // an append to an existing session, which may share one statement with others
	// combined: the append went in a statement shared with others, whose
	// results are in app, not through scan.
	combined bool
	scan     func(row pgx.Row) error // reads the row of a QueryRow
	// records is the number of journal records an append carries, and
	// appended answers, once the statement ran, whether it wrote them
	// (its compare-and-set and fence held).
	records  int
	appended func() bool
	tag      pgconn.CommandTag
	err      error
	sent     bool
	done     chan struct{}
}

// grouper gathers groupOps into batches.
type grouper struct {
	db      *DB
	batches batches[*groupOp]
}

// do commits op, alone or in a batch with others, and answers whether it
// was sent (false: op.ctx ended first, nothing was sent) and the
// statement's error: the scan's or the tag's error when the transaction
// committed, else the driver's.
func (g *grouper) do(op *groupOp) (bool, error) {
	op.done = make(chan struct{})
	g.batches.add(op)
	<-op.done
	return op.sent, op.err
}

// run commits one batch.
func (g *grouper) run(batch []*groupOp) {
	live := batch[:0]
	for _, op := range batch {
		if op.ctx.Err() != nil {
			op.err = op.ctx.Err()
			close(op.done)
			continue
		}
		live = append(live, op)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		g.runOne(live[0])
		return
	}
	// Key order: two batches running at once take their row locks in the
	// same order, so they never deadlock; one key's statements keep the
	// order they came in.
	slices.SortStableFunc(live, func(a, b *groupOp) int { return strings.Compare(a.key, b.key) })
	ctx, cancel := context.WithTimeout(context.Background(), g.db.opts.OpTimeout)
	defer cancel()
	// The appends to existing sessions, the first of each session, go in
	// one statement; the rest, each in its own, after it.
	var apps, rest []*groupOp
	for i, op := range live {
		if op.app != nil && (i == 0 || live[i-1].key != op.key) {
			apps = append(apps, op)
		} else {
			rest = append(rest, op)
		}
	}
	if len(apps) < 2 {
		apps, rest = nil, live
	}
	b := &pgx.Batch{}
	rides := false
	if apps != nil {
		var sql string
		var args []any
		sql, args, rides = combinedAppend(apps, g.db.opts.Fenced, g.db.opts.NodeID, g.db.instance)
		b.Queue(sql, args...)
	}
	for _, op := range rest {
		b.Queue(op.sql, op.args...)
	}
	start := time.Now()
	br := g.db.send.SendBatch(ctx, b)
	var combinedErr error
	if apps != nil {
		combinedErr = readCombined(br, apps, rides)
	}
	// failed is the statement of rest the server refused, if any: the
	// first with the server's error (the ones after it were not run, and
	// answer the same error).
	var failed *groupOp
	for _, op := range rest {
		if op.exec {
			op.tag, op.err = br.Exec()
		} else {
			op.err = op.scan(br.QueryRow())
		}
		if failed == nil && combinedErr == nil && refused(op.err) {
			failed = op
		}
	}
	err := br.Close()
	switch {
	case err == nil:
		g.committed(live, time.Since(start))
		for _, op := range live {
			op.sent = true
			close(op.done)
		}
	case refused(err):
		// The server refused a statement or the commit: the transaction
		// was rolled back, so each statement runs again on its own.
		g.rerun(live, failed)
	default:
		// The connection failed, or the answer leaves the commit's
		// outcome unknown: nothing is run again.
		for _, op := range live {
			op.sent, op.err = true, err
			close(op.done)
		}
	}
}

// rerun runs the statements of a batch that the server rolled back
// (live, in key order) again, each in a transaction of its own: those of
// distinct keys at once (at most groupRerun at a time), those of one key
// in their order. So a key whose row a stopped process holds costs only
// its own statements a wait for the lock, not every statement after it.
// A statement that waited lock_timeout for its lock (failed, in the
// batch, or on its own) answers that failure, nothing of it committed,
// and so do the statements of its key after it, at once: run again, they
// would wait as long for the same row.
func (g *grouper) rerun(live []*groupOp, failed *groupOp) {
	sem := make(chan struct{}, groupRerun)
	var wg sync.WaitGroup
	for len(live) > 0 {
		n := 1
		for n < len(live) && live[n].key == live[0].key {
			n++
		}
		ops := live[:n]
		live = live[n:]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var locked error
			for _, op := range ops {
				if op == failed && lockTimedOut(op.err) {
					locked = op.err
				}
				if locked != nil {
					op.tag, op.err, op.combined, op.sent = pgconn.CommandTag{}, locked, false, true
					close(op.done)
					continue
				}
				op.tag, op.err, op.combined = pgconn.CommandTag{}, nil, false
				g.runOne(op)
				if lockTimedOut(op.err) {
					locked = op.err
				}
			}
		})
	}
	wg.Wait()
}

// lockTimedOut reports whether err is the server's refusal of a statement
// that waited lock_timeout for a lock.
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// runOne commits op in a transaction of its own.
func (g *grouper) runOne(op *groupOp) {
	defer close(op.done)
	if err := op.ctx.Err(); err != nil {
		op.err = err
		return
	}
	op.sent = true
	ctx, cancel := context.WithTimeout(op.ctx, g.db.opts.OpTimeout)
	defer cancel()
	start := time.Now()
	if op.exec {
		op.tag, op.err = g.db.send.Exec(ctx, op.sql, op.args...)
	} else {
		op.err = op.scan(g.db.send.QueryRow(ctx, op.sql, op.args...))
	}
	if op.err == nil {
		g.committed([]*groupOp{op}, time.Since(start))
	}
}

// committed reports a committed transaction that took d to
// Options.OnCommit with the journal records its appends wrote, if any.
func (g *grouper) committed(ops []*groupOp, d time.Duration) {
	if g.db.opts.OnCommit == nil {
		return
	}
	n := 0
	for _, op := range ops {
		if op.records > 0 && op.err == nil && op.appended != nil && op.appended() {
			n += op.records
		}
	}
	if n > 0 {
		g.db.opts.OnCommit(n, d)
	}
}
