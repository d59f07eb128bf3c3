package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cancelOnClose has the statement that c runs cancelled on the server
// when Close begins (db.ops ends), so that Close never waits for it: the
// server ends it, a wait for a row lock included, and answers 57014
// query_canceled, its transaction rolled back; or it had already
// committed, and answers that. Only when the cancel request could not be
// sent, or the server did not answer it within a quarter of OpTimeout,
// is giveUp called, which cancels the statement's context. The function
// answered ends the arrangement once the statement was answered, and
// reports whether it was cancelled: c must then be closed, not given
// back to the pool, since a cancel request that came late would cancel
// its next statement.
func (db *DB) cancelOnClose(c *pgxpool.Conn, giveUp context.CancelFunc) (end func() (cancelled bool)) {
	answered := make(chan struct{})
	done := make(chan struct{})
	stop := context.AfterFunc(db.ops, func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), max(db.opts.OpTimeout/4, time.Millisecond))
		defer cancel()
		if c.Conn().PgConn().CancelRequest(ctx) == nil {
			select {
			case <-answered:
				return
			case <-ctx.Done():
			}
		}
		giveUp()
	})
	return func() bool {
		close(answered)
		if stop() {
			return false
		}
		<-done
		return true
	}
}

// closeConn closes c, whose statement was cancelled, and gives its
// place in the pool back.
func (db *DB) closeConn(c *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), max(db.opts.OpTimeout/4, time.Millisecond))
	defer cancel()
	c.Conn().Close(ctx)
	c.Release()
}
