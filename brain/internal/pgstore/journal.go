package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// notifyChannel carries "<hex session id> <last sequence>" after every
// commit of a journal, and "<hex session id> 0" after a delete.
const notifyChannel = "brain_journal"

// Journal is a journal.Store whose records are rows of brain_records, one
// per record, keyed by (session_id, sequence). It passes journaltest.
type Journal struct {
	db *DB

	notifyMu sync.Mutex
	toNotify map[string]uint64 // session → last committed sequence, not yet notified
	notifyCh chan struct{}

	mu     sync.Mutex
	closed bool
	feeds  map[string]*sessionFeeds // sessions with local subscriptions

	// rides are the riding claims of this process (Requests.ClaimRiding)
	// by the data of their claim and answer records, which appends carry.
	ridesMu sync.Mutex
	rides   map[string]*RequestClaim
}

var _ journal.Store = (*Journal)(nil)

func newJournal(db *DB) *Journal {
	return &Journal{db: db, feeds: map[string]*sessionFeeds{}, toNotify: map[string]uint64{}, notifyCh: make(chan struct{}, 1),
		rides: map[string]*RequestClaim{}}
}

func (j *Journal) usable() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return journal.ErrClosed
	}
	return nil
}

// Append implements journal.Store. When the DB is Fenced, the append also
// requires this node's live lease on the session (ErrNotOwner otherwise).
// A failure reaching the database is ErrUnavailable (nothing committed),
// a connection lost after the statement was sent ErrOutcomeUnknown.
func (j *Journal) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := journal.CheckAppend(session, records); err != nil {
		return err
	}
	if err := j.usable(); err != nil {
		return err
	}
	if expectedNext == 0 {
		return fmt.Errorf("%w: session %s expected 0, next is at least 1", journal.ErrConflict, session)
	}
	n := len(records)
	var args []any
	var forms [4]string // create, next, create fenced, next fenced
	if n == 1 {
		r := &records[0]
		var data, origin []byte
		if len(r.Data) > 0 {
			data = r.Data
		}
		if r.Origin != nil {
			origin = r.Origin
		}
		args = []any{[]byte(session), int64(expectedNext), []byte(r.Kind), encodeTimes(records[:1])[0], data, origin, int32(journal.FrameSize(r))}
		forms = [4]string{appendOneCreate, appendOneNext, appendOneCreateFenced, appendOneNextFenced}
	} else {
		kinds := make([][]byte, n)
		data := make([][]byte, n)
		origins := make([][]byte, n)
		frames := make([]int32, n)
		for i := range records {
			kinds[i] = []byte(records[i].Kind)
			if len(records[i].Data) > 0 {
				data[i] = records[i].Data
			}
			if records[i].Origin != nil {
				origins[i] = records[i].Origin
			}
			frames[i] = int32(journal.FrameSize(&records[i]))
		}
		args = []any{[]byte(session), int64(expectedNext), kinds, encodeTimes(records), data, origins, frames}
		forms = [4]string{appendCreate, appendNext, appendCreateFenced, appendNextFenced}
	}
	form := 0
	if expectedNext > 1 {
		form = 1
	}
	epoch, err := j.fence(session)
	if err != nil {
		return err
	}
	if j.db.opts.Fenced {
		args = append(args, j.db.opts.NodeID, epoch)
		form += 2
	}
	// last is the session's new last_ms (one record) or its previous one
	// (many records); now is the statement's time (many records).
	var headRows, leaseRows, now int64
	var last *int64
	op := &groupOp{ctx: ctx, key: "s" + session, sql: forms[form], args: args, records: n,
		scan: func(row pgx.Row) error { return row.Scan(&headRows, &leaseRows, &last, &now) }}
	op.appended = func() bool {
		if op.combined {
			return op.app.lease && op.app.head && op.app.old != nil
		}
		return leaseRows != 0 && headRows != 0 && last != nil
	}
	times := encodeTimes(records)
	rides, err := j.ridesOf(records)
	if err != nil {
		return err
	}
	if len(rides) > 0 && expectedNext == 1 {
		return fmt.Errorf("%w: a request's claim rides only an existing session's append", journal.ErrInvalid)
	}
	if expectedNext > 1 {
		op.app = &appendOp{session: session, expected: int64(expectedNext), epoch: epoch, records: records, times: times, rides: rides}
	}
	if len(rides) > 0 {
		// The rows go in the combined statement, even alone.
		ops := []*groupOp{op}
		op.sql, op.args, _ = combinedAppend(ops, j.db.opts.Fenced, j.db.opts.NodeID, j.db.instance)
		op.scan = func(row pgx.Row) error { return scanCombined(row, ops, true) }
	}
	sent, err := j.db.group.do(op)
	if !sent {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.TableName == "brain_requests" {
		return fmt.Errorf("append: %w: %w", errKeyTaken, err)
	}
	if err != nil {
		err = classify("append", err, true)
		if op.app != nil && errors.Is(err, ErrOutcomeUnknown) {
			j.rode(op.app, false)
		}
		return err
	}
	if op.combined {
		a := op.app
		if !a.lease {
			return fmt.Errorf("%w: session %s (lease lost)", ErrNotOwner, session)
		}
		if !a.head || a.old == nil {
			return fmt.Errorf("%w: session %s expected %d", journal.ErrConflict, session, expectedNext)
		}
		for i := range records {
			records[i].Sequence = expectedNext + uint64(i)
			records[i].RecordedAtMs = decodeStamp(*a.old, times[i], a.now)
		}
		if len(a.rides) > 0 {
			j.rode(a, true)
		}
		j.committed(session, expectedNext, records)
		return nil
	}
	if leaseRows == 0 {
		return fmt.Errorf("%w: session %s (lease lost)", ErrNotOwner, session)
	}
	if headRows == 0 || last == nil {
		return fmt.Errorf("%w: session %s expected %d", journal.ErrConflict, session, expectedNext)
	}
	if n == 1 {
		records[0].Sequence, records[0].RecordedAtMs = expectedNext, *last
	} else {
		for i := range records {
			records[i].Sequence = expectedNext + uint64(i)
			records[i].RecordedAtMs = decodeStamp(*last, times[i], now)
		}
	}
	j.committed(session, expectedNext, records)
	return nil
}

// committed hands the records an append committed to Options.OnDurable,
// the local subscriptions and the other nodes.
func (j *Journal) committed(session string, first uint64, records []journal.Record) {
	if f := j.db.opts.OnDurable; f != nil {
		f(session, records)
	}
	j.published(session, first, records)
	j.notifyLater(session, first+uint64(len(records))-1)
}

// Next implements journal.Store.
func (j *Journal) Next(ctx context.Context, session string) (uint64, error) {
	if err := journal.CheckSession(session); err != nil {
		return 0, err
	}
	if err := j.usable(); err != nil {
		return 0, err
	}
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	var next int64
	err := j.db.pool.QueryRow(ctx, `SELECT next_seq FROM brain_sessions WHERE session_id = $1`, []byte(session)).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 1, nil
	}
	if err != nil {
		return 0, classify("next", err, false)
	}
	return uint64(next), nil
}

// Read implements journal.Store: the byte bound counts each record's frame
// size in FileStore's format, so pages are the same as FileStore's.
func (j *Journal) Read(ctx context.Context, session string, after uint64, maxRecords, maxBytes int) ([]journal.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := journal.CheckSession(session); err != nil {
		return nil, err
	}
	if err := j.usable(); err != nil {
		return nil, err
	}
	if maxRecords <= 0 {
		maxRecords = journal.DefaultPageRecords
	}
	if maxBytes <= 0 {
		maxBytes = journal.DefaultPageBytes
	}
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	rows, err := j.db.pool.Query(ctx, readPage, []byte(session), int64(after), maxRecords, maxBytes)
	if err != nil {
		return nil, classify("read", err, false)
	}
	var next *int64
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (journal.Record, error) {
		var rec journal.Record
		var seq, at *int64
		var kind, data, origin []byte
		if err := r.Scan(&seq, &kind, &at, &data, &origin, &next); err != nil {
			return rec, err
		}
		if seq == nil || at == nil {
			// The row of a page without records (the columns are NOT
			// NULL in brain_records).
			return rec, errNoRecords
		}
		rec.Sequence, rec.Kind, rec.RecordedAtMs = uint64(*seq), string(kind), *at
		if len(data) > 0 {
			rec.Data = data
		}
		if origin != nil {
			rec.Origin = origin
		}
		return rec, nil
	})
	if errors.Is(err, errNoRecords) {
		out, err = nil, nil
	}
	if err != nil {
		return nil, classify("read", err, false)
	}
	return checkPage(session, after, next, out)
}

// Sessions implements journal.Store: the sessions with records, in byte
// order of their ids.
func (j *Journal) Sessions(ctx context.Context) ([]string, error) {
	if err := j.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	rows, err := j.db.pool.Query(ctx, `SELECT session_id FROM brain_sessions ORDER BY session_id`)
	if err != nil {
		return nil, classify("sessions", err, false)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id []byte
		err := r.Scan(&id)
		return string(id), err
	})
	if err != nil {
		return nil, classify("sessions", err, false)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// WriteCheckpoint implements journal.Store. When the DB is Fenced, the
// write also requires this node's live lease on the session, as an append
// does (ErrNotOwner otherwise, nothing written): a node that lost the
// lease never replaces the new owner's checkpoint, nor writes its
// projection over a session of the same id created anew.
func (j *Journal) WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error {
	if err := journal.CheckSession(session); err != nil {
		return err
	}
	if err := j.usable(); err != nil {
		return err
	}
	if payload == nil {
		payload = []byte{}
	}
	epoch, err := j.fence(session)
	if err != nil {
		return err
	}
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	var owned, written bool
	var last int64
	if j.db.opts.Fenced {
		err = j.db.send.QueryRow(ctx, checkpointFenced, []byte(session), int64(through), payload, epoch, j.db.opts.NodeID).Scan(&owned, &written, &last)
	} else {
		owned = true
		err = j.db.send.QueryRow(ctx, checkpointPlain, []byte(session), int64(through), payload).Scan(&written, &last)
	}
	if err != nil {
		return classify("write checkpoint", err, true)
	}
	if !owned {
		return fmt.Errorf("%w: session %s epoch %d", ErrNotOwner, session, epoch)
	}
	if !written && last == 0 {
		return fmt.Errorf("%w: checkpoint of session %s, which holds no record", journal.ErrInvalid, session)
	}
	if !written {
		return fmt.Errorf("%w: checkpoint through %d but session %s ends at %d", journal.ErrInvalid, through, session, last)
	}
	return nil
}

// The checkpoint statements: $1 session, $2 through, $3 payload, and for
// the fenced one $4 epoch and $5 node; each answers whether the row was
// written and the session's last sequence (0: it holds no record, and
// nothing is written, as FileStore and MemStore refuse it). The share
// lock on the session row orders the write after a concurrent delete,
// whose commit leaves no session to cover, and after a concurrent
// takeover, which raises the row's epoch: the fenced write needs the
// row's epoch to be the lease's and the lease row to name this node with
// that epoch, unexpired, as a fenced append does.
const (
	checkpointPlain = `WITH s AS (
		SELECT next_seq FROM brain_sessions WHERE session_id = $1 FOR SHARE
	), ins AS (
		INSERT INTO brain_checkpoints (session_id, through, payload)
		SELECT $1, $2, $3
		WHERE $2 <= coalesce((SELECT next_seq - 1 FROM s), 0) AND coalesce((SELECT next_seq - 1 FROM s), 0) > 0
		ON CONFLICT (session_id) DO UPDATE SET through = EXCLUDED.through, payload = EXCLUDED.payload
		RETURNING 1)
	SELECT EXISTS (SELECT 1 FROM ins), coalesce((SELECT next_seq - 1 FROM s), 0)`
	checkpointFenced = `WITH s AS (
		SELECT next_seq, epoch FROM brain_sessions WHERE session_id = $1 FOR SHARE
	), ok AS (
		SELECT 1 WHERE coalesce((SELECT epoch FROM s) = $4, true)
			AND EXISTS (SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $5 AND epoch = $4 AND expires_at > statement_timestamp())
	), ins AS (
		INSERT INTO brain_checkpoints (session_id, through, payload)
		SELECT $1, $2, $3
		WHERE EXISTS (SELECT 1 FROM ok) AND $2 <= coalesce((SELECT next_seq - 1 FROM s), 0) AND coalesce((SELECT next_seq - 1 FROM s), 0) > 0
		ON CONFLICT (session_id) DO UPDATE SET through = EXCLUDED.through, payload = EXCLUDED.payload
		RETURNING 1)
	SELECT EXISTS (SELECT 1 FROM ok), EXISTS (SELECT 1 FROM ins), coalesce((SELECT next_seq - 1 FROM s), 0)`
)

// ReadCheckpoint implements journal.Store.
func (j *Journal) ReadCheckpoint(ctx context.Context, session string) (uint64, []byte, error) {
	if err := journal.CheckSession(session); err != nil {
		return 0, nil, err
	}
	if err := j.usable(); err != nil {
		return 0, nil, err
	}
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	var through int64
	var payload []byte
	err := j.db.pool.QueryRow(ctx, `SELECT c.through, c.payload FROM brain_checkpoints c
		LEFT JOIN brain_sessions s ON s.session_id = c.session_id
		WHERE c.session_id = $1 AND c.through <= coalesce(s.next_seq - 1, 0)`, []byte(session)).Scan(&through, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, fmt.Errorf("pgstore: checkpoint of %s: %w", session, journal.ErrNotFound)
	}
	if err != nil {
		return 0, nil, classify("read checkpoint", err, false)
	}
	return uint64(through), payload, nil
}

// fence answers the epoch of this node's live lease on session when
// leases are enforced (ErrNotOwner without one), 0 when they are not.
func (j *Journal) fence(session string) (int64, error) {
	if !j.db.opts.Fenced {
		return 0, nil
	}
	l, ok := j.db.heldLease(session)
	if !ok {
		return 0, fmt.Errorf("%w: session %s", ErrNotOwner, session)
	}
	return l.Epoch, nil
}

// Delete implements journal.Store. Deleting the session row first waits
// for an append in flight and makes later ones fail their compare-and-set,
// so the records deleted next are all there are. The session's secrets
// go in the same transaction: a deleted session leaves none behind, even
// when the lease runs out right after the delete. When the DB is Fenced,
// the delete, like an append, requires this node's live lease on the
// session (ErrNotOwner otherwise, nothing deleted): a node that lost the
// lease never deletes what the new owner runs.
func (j *Journal) Delete(ctx context.Context, session string) error {
	if err := journal.CheckSession(session); err != nil {
		return err
	}
	if err := j.usable(); err != nil {
		return err
	}
	epoch, err := j.fence(session)
	if err != nil {
		return err
	}
	octx, cancel := j.db.opCtx(ctx)
	defer cancel()
	id := []byte(session)
	conn, err := j.db.send.acquire(octx)
	if err != nil {
		return classify("delete", err, true)
	}
	defer conn.Release()
	err = pgx.BeginFunc(octx, conn, func(tx pgx.Tx) error {
		if j.db.opts.Fenced {
			if err := j.deleteFenced(octx, tx, id, epoch); err != nil {
				return err
			}
		} else {
			for _, q := range []string{
				`DELETE FROM brain_sessions WHERE session_id = $1`,
				`DELETE FROM brain_secrets WHERE session_id = $1`,
			} {
				if _, err := tx.Exec(octx, q, id); err != nil {
					return err
				}
			}
		}
		for _, q := range []string{
			`DELETE FROM brain_records WHERE session_id = $1`,
			`DELETE FROM brain_checkpoints WHERE session_id = $1`,
			`SELECT pg_notify('` + notifyChannel + `', encode($1, 'hex') || ' 0')`,
		} {
			if _, err := tx.Exec(octx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrNotOwner) {
		return err
	}
	if err != nil {
		return classify("delete", err, true)
	}
	j.deleted(session)
	return nil
}

// deleteFenced deletes the session row and the session's secrets under
// the lease of epoch, as a fenced append's compare-and-set checks it: the
// row's epoch is the lease's (a takeover raises it after waiting for this
// row lock) and the lease row names this node with that epoch, unexpired.
// A session row that exists but fails the check answers ErrNotOwner. A
// session without one has no journal to fence; its secrets go only under
// the conditions of a fenced Secrets.DeleteAll, and stay otherwise (they
// may be those of a session another node is creating under the same id).
// The lease row is locked only then: with the session row locked, it
// would be taken in the order opposite to a takeover's.
func (j *Journal) deleteFenced(ctx context.Context, tx pgx.Tx, id []byte, epoch int64) error {
	var deleted, existed bool
	err := tx.QueryRow(ctx, `WITH del AS (
			DELETE FROM brain_sessions WHERE session_id = $1 AND epoch = $3
				AND EXISTS (SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $2 AND epoch = $3 AND expires_at > statement_timestamp())
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM del), EXISTS (SELECT 1 FROM brain_sessions WHERE session_id = $1)`,
		id, j.db.opts.NodeID, epoch).Scan(&deleted, &existed)
	if err != nil {
		return err
	}
	if existed && !deleted {
		return fmt.Errorf("%w: session %s epoch %d", ErrNotOwner, string(id), epoch)
	}
	if deleted {
		_, err = tx.Exec(ctx, `DELETE FROM brain_secrets WHERE session_id = $1`, id)
		return err
	}
	_, err = tx.Exec(ctx, `WITH `+secretsFence+`
		DELETE FROM brain_secrets WHERE session_id = $1 AND EXISTS (SELECT 1 FROM ok)`, id, j.db.opts.NodeID, epoch)
	return err
}

// Close implements journal.Store: it ends every subscription with
// ErrClosed; the DB stays open.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return journal.ErrClosed
	}
	j.closed = true
	all := j.feeds
	j.feeds = map[string]*sessionFeeds{}
	j.mu.Unlock()
	for _, sf := range all {
		sf.mu.Lock()
		for f := range sf.subs {
			f.End(journal.ErrClosed)
		}
		sf.mu.Unlock()
	}
	return nil
}
