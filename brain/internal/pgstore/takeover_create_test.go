package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/jackc/pgx/v5"
)

// TestTakeoverDuringFirstAppend: a session's first append is still
// committing when its node's lease runs out and another node takes the
// lease over (the takeover waits for that append, whose fence passed).
// The new owner must be able to write the session: its appends are fenced
// on the epoch it took, so the session row written by the first append
// must carry that epoch too. The old owner stays fenced out.
func TestTakeoverDuringFirstAppend(t *testing.T) {
	const lease = 500 * time.Millisecond
	url, a, b := fencedNodes(t, lease)
	ctx := context.Background()
	if _, err := a.AcquireLease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	// Hold the first record's key in a transaction of the test's own, so
	// that a's first append (its fence passed, the session row inserted)
	// waits on it while the lease runs out.
	blocker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, frame_bytes) VALUES ($1, 1, $2, 0, 0)`,
		[]byte("s"), []byte("blocker")); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- a.Journal().Append(ctx, "s", 1, []journal.Record{rec("created", 1)}) }()
	waitForLockWait(t, url)
	time.Sleep(lease + 100*time.Millisecond) // a's lease expires in the database
	taken := make(chan error, 1)
	var lb pgstore.Lease
	go func() {
		var err error
		lb, err = b.AcquireLease(ctx, "s")
		taken <- err
	}()
	time.Sleep(300 * time.Millisecond) // b's takeover is waiting on a's append
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("a's first append (fence passed before the lease ran out) = %v", err)
	}
	if err := <-taken; err != nil {
		t.Fatalf("b's takeover of the expired lease = %v", err)
	}
	// A conflict would be retried after reading the head again: it must
	// not last.
	for try := 1; ; try++ {
		next, err := b.Journal().Next(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		err = b.Journal().Append(ctx, "s", next, []journal.Record{rec("by b", 2)})
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("the new owner's append (epoch %d) at %d, attempt %d = %v", lb.Epoch, next, try, err)
		}
	}
	if err := a.Journal().Append(ctx, "s", 3, []journal.Record{rec("by a", 3)}); !errors.Is(err, pgstore.ErrNotOwner) {
		t.Fatalf("the old owner's append = %v, want ErrNotOwner", err)
	}
	recs, err := b.Journal().Read(ctx, "s", 0, 0, 0)
	if err != nil || len(recs) != 2 || recs[1].Kind != "by b" {
		t.Fatalf("journal = %+v, %v; want created, by b", recs, err)
	}
}

// waitForLockWait waits until some backend of the database waits on a
// lock.
func waitForLockWait(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		sqlScan(t, url, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`, &n)
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no statement waits on a lock")
		}
	}
}
