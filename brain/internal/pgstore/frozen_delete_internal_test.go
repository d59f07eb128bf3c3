package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestNodeStoppedMidDeleteDoesNotHoldTheSession: a node stopped (SIGSTOP,
// a hung host) in the middle of deleting a session holds the session's
// row lock in a transaction that never ends. Once its lease expired,
// another node takes the session over all the same, within a few
// OpTimeouts: the server ends a transaction left idle that long. When the
// stopped node resumes, its delete fails as unavailable (nothing
// committed) and the new owner's records are all there.
func TestNodeStoppedMidDeleteDoesNotHoldTheSession(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	const op = 500 * time.Millisecond
	open := func(node string) *DB {
		db, err := Open(ctx, Options{URL: url, SealingKey: []byte("0123456789abcdef0123456789abcdef"), NodeID: node,
			LeaseDuration: time.Second, OpTimeout: op, Fenced: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open("a"), open("b")
	const s = "stopped-mid-delete"
	l, err := a.AcquireLease(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Journal().Append(ctx, s, 1, []journal.Record{{Kind: "k", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	// A's Delete, stopped after its first statement.
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.journal.deleteFenced(ctx, tx, []byte(s), l.Epoch); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(time.Second + 8*op)
	for {
		_, err := b.Own(ctx, s)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another node could not take the session over while its old owner was stopped mid-delete: %v", err)
		}
		time.Sleep(op / 5)
	}
	if err := b.Journal().Append(ctx, s, 2, []journal.Record{{Kind: "k", Data: []byte(`{}`)}}); err != nil {
		t.Fatalf("append by the new owner = %v", err)
	}

	// A resumes: the rest of its delete commits nothing.
	_, err = tx.Exec(ctx, `DELETE FROM brain_records WHERE session_id = $1`, []byte(s))
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err = classify("delete", err, true); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the stopped delete, resumed = %v, want ErrUnavailable (nothing committed)", err)
	}
	if next, err := b.Journal().Next(ctx, s); err != nil || next != 3 {
		t.Fatalf("Next = %d, %v; want 3: the new owner's records are there", next, err)
	}
}

// TestIdleTransactionEndedIsUnavailable: over TCP, the resumed node reads
// the server's report that it ended the idle transaction (SQLSTATE 25P03)
// before the connection's end: nothing of the transaction committed, so
// the write is refused as unavailable (503, retryable), not a failure of
// unknown kind.
func TestIdleTransactionEndedIsUnavailable(t *testing.T) {
	err := classify("delete", &pgconn.PgError{Severity: "FATAL", Code: "25P03",
		Message: "terminating connection due to idle-in-transaction timeout"}, true)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("classify(25P03) = %v, want ErrUnavailable", err)
	}
}
