package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// sweepBatch bounds how many sessions' orphaned secrets one sweep removes.
const sweepBatch = 512

// sweepLeases is how many lease lengths pass between two sweeps of a
// node for orphaned secrets.
const sweepLeases = 3

// orphanLeasesSQL locks the lease rows ($2 at most) that ran out more
// than $1 seconds ago and whose session has secrets but no session row:
// sessions whose creation stored credentials but never committed its
// first append. Rows another transaction locks (an append or a write of
// secrets in flight, a takeover) are skipped.
const orphanLeasesSQL = `SELECT l.session_id FROM brain_leases l
	WHERE l.expires_at < now() - make_interval(secs => $1)
		AND EXISTS (SELECT 1 FROM brain_secrets s WHERE s.session_id = l.session_id)
		AND NOT EXISTS (SELECT 1 FROM brain_sessions x WHERE x.session_id = l.session_id)
	ORDER BY l.session_id
	LIMIT $2
	FOR NO KEY UPDATE OF l SKIP LOCKED`

// deleteOrphansSQL removes the secrets of the sessions $1, whose lease
// rows the transaction locked, that still have no session row. It runs
// as a statement of its own, so that its snapshot, taken after the locks,
// sees every append that committed before them.
const deleteOrphansSQL = `DELETE FROM brain_secrets s USING brain_leases l
	WHERE s.session_id = ANY($1) AND l.session_id = s.session_id
		AND l.expires_at < now() - make_interval(secs => $2)
		AND NOT EXISTS (SELECT 1 FROM brain_sessions x WHERE x.session_id = s.session_id)`

// sweepSecrets removes the secrets of sessions that were never created:
// their creation stored credentials, then its first append was refused or
// never sent (the lease ran out, the node stopped) and the node could not
// forget them, having lost the lease. Such a session has secrets, no
// session row, and a lease that ran out more than twice OpTimeout ago.
// Holding the lease row's lock, no node can take the lease, store a
// secret or commit a first append meanwhile (each needs that row, and a
// live lease); an append sent under the lease before it ran out either
// ended long before (no live node's statement runs that long) or still
// holds the row, which is skipped. So the secrets of a session that
// exists, or that a node holding a live lease is creating, are never
// removed. An error is retried at the next sweep.
func (db *DB) sweepSecrets(ctx context.Context) error {
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	margin := secs(2 * db.opts.OpTimeout)
	return pgx.BeginFunc(ctx, db.upkeep, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, orphanLeasesSQL, margin, sweepBatch)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil || len(ids) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, deleteOrphansSQL, ids, margin)
		return err
	})
}

// sweepDue reports whether a sweep for orphaned secrets is due at now,
// the last one having run at last, and records it as run.
func (db *DB) sweepDue(last *time.Time, now time.Time) bool {
	if !db.opts.Fenced || now.Sub(*last) < sweepLeases*db.opts.LeaseDuration {
		return false
	}
	*last = now
	return true
}
