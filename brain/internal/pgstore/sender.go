package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Writes take their connection before they send anything. A write that
// could not get one (every connection of the pool busy until the
// operation's deadline, or the database unreachable) was never sent, so
// nothing of it committed: it fails with ErrUnavailable, never with
// ErrOutcomeUnknown, which the pool's own error (the bare error of the
// operation's context) would not tell apart from a statement given up
// after it was sent.

// notSent is the error of a write that got no connection.
type notSent struct{ err error }

func (e *notSent) Error() string { return "no connection for the statement: " + e.err.Error() }

func (e *notSent) Unwrap() error { return e.err }

// unsent reports whether err is that of a write that got no connection.
func unsent(err error) bool {
	var ns *notSent
	return errors.As(err, &ns)
}

// sender runs a write on a connection of pool that it takes first.
type sender struct{ pool *pgxpool.Pool }

// acquire takes a connection, or answers a *notSent error.
func (s sender) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, &notSent{err: err}
	}
	return c, nil
}

// Exec runs one statement.
func (s sender) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := s.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

// QueryRow runs one statement answering a row; the connection is given
// back once the row is scanned.
func (s sender) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := s.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return &connRow{row: c.QueryRow(ctx, sql, args...), c: c}
}

// SendBatch sends a pipelined batch; the connection is given back when
// the results are closed.
func (s sender) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := s.acquire(ctx)
	if err != nil {
		return errBatch{err}
	}
	return &connBatch{BatchResults: c.SendBatch(ctx, b), c: c}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type connRow struct {
	row pgx.Row
	c   *pgxpool.Conn
}

func (r *connRow) Scan(dest ...any) error {
	defer r.c.Release()
	return r.row.Scan(dest...)
}

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

type connBatch struct {
	pgx.BatchResults
	c      *pgxpool.Conn
	closed bool
}

func (b *connBatch) Close() error {
	err := b.BatchResults.Close()
	if !b.closed {
		b.closed = true
		b.c.Release()
	}
	return err
}
