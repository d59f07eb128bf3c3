package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Grouped reads of idempotency keys: the reads of a riding claim (see
// Requests.ClaimRiding) that wait at the same moment go to the database
// as one statement, which looks every key up by its primary key and
// answers a row for each key that has one. Each read still sees every
// commit made before it was asked for (the statement's snapshot is taken
// after), so grouping changes nothing but the number of statements: one
// per batch instead of one per request. At most readInFlight batches run
// at once; a lone read runs at once on its own.
const (
	readInFlight = 2
	readMax      = 128
)

// keyRow is a key's brain_requests row as a claim reads it.
type keyRow struct {
	digest   []byte
	status   *int32
	body     []byte
	instance string
	expired  bool // answered and older than the retention, as of the database's now
}

// keyRead is one read of a key's row.
type keyRead struct {
	ctx       context.Context
	scope     string
	key       []byte
	retention int64 // milliseconds, 0: forever

	row   keyRow
	found bool
	err   error
	done  chan struct{}
}

// keyReader gathers keyReads into batches.
type keyReader struct {
	db      *DB
	batches batches[*keyRead]
}

const readKeySQL = `SELECT digest, status, body, instance,
		$3::bigint > 0 AND status IS NOT NULL AND at < now() - make_interval(secs => $3::bigint / 1000.0)
	FROM brain_requests WHERE scope = $1 AND key = $2`

// readKeysSQL looks each key up by its primary key (OFFSET 0 keeps the
// lookup a per-key index scan rather than a join over the table).
const readKeysSQL = `SELECT r.i, q.digest, q.status, q.body, q.instance,
		r.rt > 0 AND q.status IS NOT NULL AND q.at < now() - make_interval(secs => r.rt / 1000.0)
	FROM unnest($1::text[], $2::bytea[], $3::bigint[]) WITH ORDINALITY AS r(s, k, rt, i)
	CROSS JOIN LATERAL (SELECT digest, status, body, instance, at FROM brain_requests
		WHERE scope = r.s AND key = r.k OFFSET 0) q`

// read answers the row of op's key (found false when there is none), or
// the error of the read.
func (kr *keyReader) read(op *keyRead) (keyRow, bool, error) {
	op.done = make(chan struct{})
	kr.batches.add(op)
	<-op.done
	return op.row, op.found, op.err
}

// run reads one batch; when the server refuses the batch's statement,
// each key is read again on its own, and when the database cannot be
// reached every read of the batch fails.
func (kr *keyReader) run(batch []*keyRead) {
	live := batch[:0]
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.err = err
			close(op.done)
			continue
		}
		live = append(live, op)
	}
	if len(live) == 1 {
		kr.runOne(live[0])
	}
	if len(live) < 2 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), kr.db.opts.OpTimeout)
	defer cancel()
	scopes := make([]string, len(live))
	keys := make([][]byte, len(live))
	rts := make([]int64, len(live))
	for i, op := range live {
		scopes[i], keys[i], rts[i] = op.scope, op.key, op.retention
	}
	rows, err := kr.db.pool.Query(ctx, readKeysSQL, scopes, keys, rts)
	if err == nil {
		for rows.Next() {
			var i int64
			var row keyRow
			if err = rows.Scan(&i, &row.digest, &row.status, &row.body, &row.instance, &row.expired); err != nil {
				break
			}
			if i < 1 || int(i) > len(live) {
				err = errors.New("pgstore: a grouped key read answered a row of no key")
				break
			}
			live[i-1].row, live[i-1].found = row, true
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	var pgErr *pgconn.PgError
	for _, op := range live {
		switch {
		case err == nil:
			close(op.done)
		case errors.As(err, &pgErr):
			// The server refused the statement: each key is read alone.
			op.row, op.found = keyRow{}, false
			kr.runOne(op)
		default:
			op.row, op.found, op.err = keyRow{}, false, err
			close(op.done)
		}
	}
}

// runOne reads op's key on its own.
func (kr *keyReader) runOne(op *keyRead) {
	defer close(op.done)
	ctx, cancel := context.WithTimeout(op.ctx, kr.db.opts.OpTimeout)
	defer cancel()
	r := &op.row
	err := kr.db.pool.QueryRow(ctx, readKeySQL, op.scope, op.key, op.retention).
		Scan(&r.digest, &r.status, &r.body, &r.instance, &r.expired)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		op.err = err
	default:
		op.found = true
	}
}
