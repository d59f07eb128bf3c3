package pgstore

import (
	"context"
	"time"
)

// PassivatedEvery bounds how often Passivated asks the database: a
// count younger than it is answered again without a query.
const PassivatedEvery = 5 * time.Second

// passivatedSQL counts the sessions that no node holds a live lease on:
// every session row, less those with a live lease, in one snapshot. The
// node receives one number whatever the number of sessions.
const passivatedSQL = `SELECT
	(SELECT count(*) FROM brain_sessions)
	- (SELECT count(*) FROM brain_leases l JOIN brain_sessions s ON s.session_id = l.session_id
		WHERE l.expires_at > now())`

// Passivated answers how many sessions of the database no node holds a
// live lease on: the sessions passivated cluster-wide (a node holds the
// lease of every session it keeps in memory). Every node answers the same
// number. The count is kept for PassivatedEvery, so that frequent scrapes
// on any number of callers cost the database at most one count per
// PassivatedEvery; callers at once share one query. When the database
// cannot answer, the last count is answered with the error.
func (db *DB) Passivated(ctx context.Context) (int, error) {
	db.census.Lock()
	defer db.census.Unlock()
	if !db.census.at.IsZero() && time.Since(db.census.at) < PassivatedEvery {
		return db.census.n, nil
	}
	ctx, cancel := db.opCtx(ctx)
	defer cancel()
	var n int64
	if err := db.pool.QueryRow(ctx, passivatedSQL).Scan(&n); err != nil {
		return db.census.n, classify("count passivated sessions", err, false)
	}
	db.census.n, db.census.at = int(max(n, 0)), time.Now()
	return db.census.n, nil
}
