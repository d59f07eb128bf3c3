package pgstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
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

// sessionFeeds are the local subscriptions of one session. pushed is the
// last sequence pushed to them; every record after it is pushed exactly
// once, in order, by whoever first learns it was committed (a local
// append, or a notification of another node's).
type sessionFeeds struct {
	mu     sync.Mutex
	pushed uint64
	subs   map[*journal.Feed]struct{}
}

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

// The append statement, in two forms: create (expectedNext 1) and next
// (an existing session), each for one record or many, plain or fenced.
// One statement in its own implicit transaction, or in the group
// commit's (see group.go), so one round trip and one commit:
//
//   - head (next) moves next_seq and last_ms if next_seq is the expected
//     one: the compare-and-set, re-checked on the newest row version if a
//     concurrent append changed it, so of two racing appends one fails;
//     old reads the session's last_ms from the same snapshot (when head
//     succeeds, no append came between). create inserts the session row
//     instead, doing nothing when it exists;
//   - lease (fenced appends) checks the node's lease row: live, with the
//     node's epoch (see leaseRow);
//   - ins writes the rows if head succeeded, each stamped as stamp says.
//
// Stamps: a record's recorded_at_ms is the largest of the session's last
// one and of the records' own times up to it, a zero time meaning the
// statement's time. The caller computes, for each record, the largest
// non-zero time up to it (at least 0) and marks whether a zero time came
// before it by sending -m-1 instead of m; stamp turns that into the time,
// and the statement answers the session's previous last_ms and its own
// time, from which the caller computes the same stamps. The statement
// does no per-record aggregation, so it costs little more than the
// inserts.
//
// The NOTIFY for other nodes is sent after the commit, by notifyLater: a
// NOTIFY inside the append would serialize every commit of the database
// (PostgreSQL holds a database-wide lock from queueing notifications
// until the commit is flushed), which defeats group commit.
const (
	nowMs = `(extract(epoch FROM statement_timestamp()) * 1000)::bigint`
	// leaseRow, for an existing session, reads the lease row without
	// locking it: the fence is the session row's epoch (head's condition),
	// which every takeover raises in the statement that takes the lease,
	// after waiting for the row lock of an append in flight.
	leaseRow = `SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $8 AND epoch = $9 AND expires_at > statement_timestamp()`
	// appendLeaseCreate: a session row does not exist yet to carry the
	// epoch, so the lease row is share-locked instead.
	appendLeaseCreate = `lease AS (
		SELECT 1 FROM brain_leases WHERE session_id = $1 AND node_id = $8 AND epoch = $9 AND expires_at > statement_timestamp()
		FOR SHARE
	)`
)

// stamp is the SQL of the time of an encoded record time m (see above).
func stamp(m string) string {
	return `CASE WHEN ` + m + ` < 0 THEN greatest(-` + m + ` - 1, ` + nowMs + `) ELSE ` + m + ` END`
}

// fence answers the parts of an append statement that check the lease:
// the count it reports, the CTE, the condition on head, and the epoch a
// new session row starts with.
func fence(existing, fenced bool) (ok, cte, cond, epoch string) {
	if !fenced {
		return "1::bigint", "", "", "0"
	}
	if existing {
		// No CTE: the lease row is read once, in head's condition, and
		// again only to tell a lost lease from a conflict when head
		// failed (an init plan in a CASE runs only when reached).
		return "CASE WHEN EXISTS (SELECT 1 FROM head) THEN 1::bigint ELSE (SELECT count(*) FROM (" + leaseRow + ") l) END", "",
			" AND epoch = $9 AND EXISTS (" + leaseRow + ")", "$9"
	}
	return "(SELECT count(*) FROM lease)", appendLeaseCreate + ",\n", " AND EXISTS (SELECT 1 FROM lease)", "$9"
}

// appendOneSQL is the one-record form (most appends): $1 session, $2
// expected next, $3 kind, $4 encoded time, $5 data, $6 origin, $7 frame
// bytes, and for fenced appends $8 node and $9 epoch. The record's stamp
// is the session's new last_ms, which head returns.
func appendOneSQL(existing, fenced bool) string {
	leaseOK, leaseCTE, leaseCond, epoch := fence(existing, fenced)
	tail := `,
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT $1, $2, $3, h.last_ms, $5, $6, $7 FROM head h
	)
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, (SELECT last_ms FROM head), 0::bigint`
	if existing {
		return "WITH " + leaseCTE + `head AS (
		UPDATE brain_sessions SET next_seq = $2 + 1, last_ms = greatest(last_ms, ` + stamp("$4::bigint") + `)
		WHERE session_id = $1 AND next_seq = $2` + leaseCond + `
		RETURNING last_ms
	)` + tail
	}
	return "WITH " + leaseCTE + `head AS (
		INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT $1, 2, greatest(0, ` + stamp("$4::bigint") + `), ` + epoch + `
		WHERE true` + leaseCond + `
		ON CONFLICT (session_id) DO NOTHING
		RETURNING last_ms
	)` + tail
}

// appendSQL is the form for many records, with arrays: $3 kinds, $4
// encoded times, $5 data, $6 origins, $7 frame bytes.
func appendSQL(existing, fenced bool) string {
	leaseOK, leaseCTE, leaseCond, epoch := fence(existing, fenced)
	last := stamp("($4::bigint[])[cardinality($4::bigint[])]")
	ins := func(old, from string) string {
		return `,
	ins AS (
		INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, origin, frame_bytes)
		SELECT $1, $2 + u.o - 1, u.k, greatest(` + old + `, ` + stamp("u.m") + `), u.d, u.og, u.fb
		FROM ` + from + `unnest($3::bytea[], $4::bigint[], $5::bytea[], $6::bytea[], $7::integer[]) WITH ORDINALITY AS u(k, m, d, og, fb, o)
		WHERE EXISTS (SELECT 1 FROM head)
	)`
	}
	if existing {
		return "WITH old AS (SELECT last_ms FROM brain_sessions WHERE session_id = $1 AND next_seq = $2),\n" + leaseCTE + `head AS (
		UPDATE brain_sessions SET next_seq = $2 + cardinality($3::bytea[]), last_ms = greatest(last_ms, ` + last + `)
		WHERE session_id = $1 AND next_seq = $2` + leaseCond + `
		RETURNING 1
	)` + ins("old.last_ms", "old, ") + `
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, (SELECT last_ms FROM old), ` + nowMs
	}
	return "WITH " + leaseCTE + `head AS (
		INSERT INTO brain_sessions (session_id, next_seq, last_ms, epoch)
		SELECT $1, 1 + cardinality($3::bytea[]), greatest(0, ` + last + `), ` + epoch + `
		WHERE true` + leaseCond + `
		ON CONFLICT (session_id) DO NOTHING
		RETURNING 1
	)` + ins("0", "") + `
	SELECT (SELECT count(*) FROM head), ` + leaseOK + `, 0::bigint, ` + nowMs
}

var (
	appendOneCreate       = appendOneSQL(false, false)
	appendOneNext         = appendOneSQL(true, false)
	appendOneCreateFenced = appendOneSQL(false, true)
	appendOneNextFenced   = appendOneSQL(true, true)
	appendCreate          = appendSQL(false, false)
	appendNext            = appendSQL(true, false)
	appendCreateFenced    = appendSQL(false, true)
	appendNextFenced      = appendSQL(true, true)
)

// encodeTimes answers the encoded times of records (see the append
// statement): for each, the largest non-zero time up to it, at least 0,
// as -m-1 once a zero time came.
func encodeTimes(records []journal.Record) []int64 {
	out := make([]int64, len(records))
	var m int64
	zero := false
	for i := range records {
		t := records[i].RecordedAtMs
		if t == 0 {
			zero = true
		} else if t > m {
			m = t
		}
		out[i] = m
		if zero {
			out[i] = -m - 1
		}
	}
	return out
}

// decodeStamp is the Go side of stamp: the time of encoded time m in a
// statement whose time was now, not below old.
func decodeStamp(old, m, now int64) int64 {
	if m < 0 {
		m = max(-m-1, now)
	}
	return max(old, m)
}

// rideClaim registers a riding claim's claim record.
func (j *Journal) rideClaim(c *RequestClaim) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	j.rides[string(c.ride.claimData)] = c
}

// rideAnswer registers the answer record data of riding claim c, for
// answer a made at at.
func (j *Journal) rideAnswer(c *RequestClaim, data []byte, a idem.Answer, at time.Time) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	if c.ride.answerData != nil {
		delete(j.rides, string(c.ride.answerData))
	}
	c.ride.answerData, c.ride.answer, c.ride.answerAt = data, a, at
	j.rides[string(data)] = c
}

// rideDone forgets a finished riding claim's records.
func (j *Journal) rideDone(c *RequestClaim) {
	j.ridesMu.Lock()
	defer j.ridesMu.Unlock()
	for _, d := range []json.RawMessage{c.ride.claimData, c.ride.answerData} {
		if d != nil && j.rides[string(d)] == c {
			delete(j.rides, string(d))
		}
	}
}

// ridesOf answers the riding claims and answers whose records are among
// records.
func (j *Journal) ridesOf(records []journal.Record) ([]rideWrite, error) {
	var out []rideWrite
	for i := range records {
		k := records[i].Kind
		if k != commits.ClaimKind && k != commits.AnswerKind {
			continue
		}
		j.ridesMu.Lock()
		c := j.rides[string(records[i].Data)]
		j.ridesMu.Unlock()
		if c == nil {
			// Its row could not be written with it.
			return nil, fmt.Errorf("%w: a %s record of no running claim of this process", journal.ErrInvalid, k)
		}
		out = append(out, rideWrite{c: c, answer: k == commits.AnswerKind})
	}
	return out, nil
}

// rode moves the riding claims of an append on: committed (ok) or its
// outcome unknown.
func (j *Journal) rode(a *appendOp, ok bool) {
	j.ridesMu.Lock()
	var durable []func()
	for _, w := range a.rides {
		r := w.c.ride
		switch {
		case !ok:
			if !w.answer && r.state == rideNew {
				r.state = rideUnknown
			}
		case w.answer:
			r.answered = a.answered || a.carriesClaim(w.c)
		default:
			if r.state != rideDurable && r.onDurable != nil {
				durable = append(durable, r.onDurable)
			}
			r.state = rideDurable
		}
	}
	j.ridesMu.Unlock()
	for _, f := range durable {
		f()
	}
}

// errKeyTaken: a riding claim's row could not be inserted because another
// request claimed the key after this one read it free; nothing of the
// append committed.
var errKeyTaken = fmt.Errorf("pgstore: the idempotency key was claimed by another request meanwhile: %w", ErrUnavailable)

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
	var epoch int64
	if j.db.opts.Fenced {
		l, ok := j.db.heldLease(session)
		if !ok {
			return fmt.Errorf("%w: session %s", ErrNotOwner, session)
		}
		epoch = l.Epoch
		args = append(args, j.db.opts.NodeID, epoch)
		form += 2
	}
	// last is the session's new last_ms (one record) or its previous one
	// (many records); now is the statement's time (many records).
	var headRows, leaseRows, now int64
	var last *int64
	op := &groupOp{ctx: ctx, key: "s" + session, sql: forms[form], args: args,
		scan: func(row pgx.Row) error { return row.Scan(&headRows, &leaseRows, &last, &now) }}
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
		j.published(session, expectedNext, records)
		j.notifyLater(session, expectedNext+uint64(n)-1)
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
	j.published(session, expectedNext, records)
	j.notifyLater(session, expectedNext+uint64(n)-1)
	return nil
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
	rows, err := j.db.pool.Query(ctx, `SELECT sequence, kind, recorded_at_ms, data, origin FROM (
			SELECT sequence, kind, recorded_at_ms, data, origin, sum(frame_bytes) OVER (ORDER BY sequence) AS total
			FROM brain_records WHERE session_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3
		) p WHERE total <= $4 OR sequence = $2 + 1 ORDER BY sequence`,
		[]byte(session), int64(after), maxRecords, maxBytes)
	if err != nil {
		return nil, classify("read", err, false)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (journal.Record, error) {
		var rec journal.Record
		var seq int64
		var kind, data, origin []byte
		if err := r.Scan(&seq, &kind, &rec.RecordedAtMs, &data, &origin); err != nil {
			return rec, err
		}
		rec.Sequence, rec.Kind = uint64(seq), string(kind)
		if len(data) > 0 {
			rec.Data = data
		}
		if origin != nil {
			rec.Origin = origin
		}
		return rec, nil
	})
	if err != nil {
		return nil, classify("read", err, false)
	}
	return out, nil
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

// WriteCheckpoint implements journal.Store.
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
	ctx, cancel := j.db.opCtx(ctx)
	defer cancel()
	// The share lock on the session row orders the write after a
	// concurrent delete, whose commit leaves no session to cover.
	tag, err := j.db.pool.Exec(ctx, `INSERT INTO brain_checkpoints (session_id, through, payload)
		SELECT $1, $2, $3
		WHERE $2 <= coalesce((SELECT next_seq - 1 FROM brain_sessions WHERE session_id = $1 FOR SHARE), 0)
		ON CONFLICT (session_id) DO UPDATE SET through = EXCLUDED.through, payload = EXCLUDED.payload`,
		[]byte(session), int64(through), payload)
	if err != nil {
		return classify("write checkpoint", err, true)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: checkpoint through %d is past the end of session %s", journal.ErrInvalid, through, session)
	}
	return nil
}

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

// Delete implements journal.Store. Deleting the session row first waits
// for an append in flight and makes later ones fail their compare-and-set,
// so the records deleted next are all there are.
func (j *Journal) Delete(ctx context.Context, session string) error {
	if err := journal.CheckSession(session); err != nil {
		return err
	}
	if err := j.usable(); err != nil {
		return err
	}
	octx, cancel := j.db.opCtx(ctx)
	defer cancel()
	id := []byte(session)
	err := pgx.BeginFunc(octx, j.db.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM brain_sessions WHERE session_id = $1`,
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
	if err != nil {
		return classify("delete", err, true)
	}
	j.deleted(session)
	return nil
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

// Subscribe implements journal.Store. Local appends are pushed at once;
// another node's commits arrive through LISTEN/NOTIFY as a wake-up and are
// read from the journal, so the data is always the committed rows.
func (j *Journal) Subscribe(ctx context.Context, session string, after uint64, backlog int) (*journal.Subscription, error) {
	if err := journal.CheckSession(session); err != nil {
		return nil, err
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil, journal.ErrClosed
	}
	sf := j.feeds[session]
	fresh := sf == nil
	if fresh {
		sf = &sessionFeeds{subs: map[*journal.Feed]struct{}{}}
		j.feeds[session] = sf
	}
	sf.mu.Lock() // held while the head is read, so no push slips between
	j.mu.Unlock()
	if fresh {
		next, err := j.Next(ctx, session)
		if err != nil {
			sf.mu.Unlock()
			j.dropIfEmpty(session, sf)
			return nil, err
		}
		sf.pushed = next - 1
	}
	defer sf.mu.Unlock()
	read := func(ctx context.Context, after uint64) ([]journal.Record, error) {
		return j.Read(ctx, session, after, 0, 0)
	}
	var f *journal.Feed
	f = journal.NewFeed(session, after, sf.pushed+1, backlog, read, func() {
		sf.mu.Lock()
		delete(sf.subs, f)
		sf.mu.Unlock()
		j.dropIfEmpty(session, sf)
	})
	sf.subs[f] = struct{}{}
	return f.Subscription(), nil
}

// dropIfEmpty forgets a session's feed set once it has no subscription.
// The caller must not hold sf.mu (the lock order is j.mu, then sf.mu).
func (j *Journal) dropIfEmpty(session string, sf *sessionFeeds) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.feeds[session] != sf {
		return
	}
	sf.mu.Lock()
	if len(sf.subs) == 0 {
		delete(j.feeds, session)
	}
	sf.mu.Unlock()
}

func (j *Journal) feedsOf(session string) *sessionFeeds {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.feeds[session]
}

// published pushes the records of a local commit (from first) to local
// subscriptions, reading from the journal any committed before them that
// were not pushed yet.
func (j *Journal) published(session string, first uint64, recs []journal.Record) {
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	last := first + uint64(len(recs)) - 1
	if last <= sf.pushed {
		return
	}
	if first > sf.pushed+1 {
		j.catchUp(context.Background(), session, sf, last)
		return
	}
	out := make([]journal.Record, 0, last-sf.pushed)
	for _, r := range recs[sf.pushed+1-first:] {
		out = append(out, clone(r))
	}
	sf.push(out)
}

// catchUp reads and pushes the records after sf.pushed through at least
// upTo (0: whatever is committed). It holds sf.mu. A read failure leaves
// sf.pushed where it was: the next commit or notification retries.
func (j *Journal) catchUp(ctx context.Context, session string, sf *sessionFeeds, upTo uint64) {
	for upTo == 0 || sf.pushed < upTo {
		page, err := j.Read(ctx, session, sf.pushed, 0, 0)
		if err != nil || len(page) == 0 || page[0].Sequence != sf.pushed+1 {
			return
		}
		sf.push(page)
		if upTo == 0 && len(page) < journal.DefaultPageRecords {
			return
		}
	}
}

func (sf *sessionFeeds) push(recs []journal.Record) {
	if len(recs) == 0 {
		return
	}
	for f := range sf.subs {
		f.Push(recs)
	}
	sf.pushed = recs[len(recs)-1].Sequence
}

// deleted ends the local subscriptions of a deleted session.
func (j *Journal) deleted(session string) {
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	for f := range sf.subs {
		f.End(fmt.Errorf("pgstore: session %s deleted: %w", session, journal.ErrNotFound))
	}
	sf.pushed = 0
}

// wakePayload encodes a notification: "<hex session id> <sequence>".
func wakePayload(session string, seq uint64) string {
	return hex.EncodeToString([]byte(session)) + " " + strconv.FormatUint(seq, 10)
}

// parseWake decodes a notification payload; ok is false for anything
// that wakePayload does not produce for a valid session id.
func parseWake(payload string) (session string, seq uint64, ok bool) {
	hexID, seqText, found := cut(payload)
	if !found {
		return "", 0, false
	}
	id, err := hex.DecodeString(hexID)
	if err != nil || hex.EncodeToString(id) != hexID || journal.CheckSession(string(id)) != nil {
		return "", 0, false
	}
	seq, err = strconv.ParseUint(seqText, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != seqText {
		return "", 0, false
	}
	return string(id), seq, true
}

// notified handles a notification payload from any node.
func (j *Journal) notified(payload string) {
	session, seq, ok := parseWake(payload)
	if !ok {
		return
	}
	if seq == 0 {
		j.deleted(session)
		return
	}
	sf := j.feedsOf(session)
	if sf == nil {
		return
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if seq > sf.pushed {
		j.catchUp(context.Background(), session, sf, seq)
	}
}

// catchUpAll reads what every followed session missed (after the listener
// reconnected: notifications sent meanwhile are lost).
func (j *Journal) catchUpAll(ctx context.Context) {
	j.mu.Lock()
	all := make(map[string]*sessionFeeds, len(j.feeds))
	for id, sf := range j.feeds {
		all[id] = sf
	}
	j.mu.Unlock()
	for id, sf := range all {
		sf.mu.Lock()
		j.catchUp(ctx, id, sf, 0)
		sf.mu.Unlock()
	}
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

func clone(r journal.Record) journal.Record {
	if r.Data != nil {
		r.Data = append([]byte(nil), r.Data...)
	}
	if r.Origin != nil {
		r.Origin = append([]byte{}, r.Origin...)
	}
	return r
}
