package pgstore_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestSlowReadOfOneSessionHoldsUpNoOther: a wake-up for a followed
// session makes the node read its records, and the read waits on the
// database (here: a lock on the records' table) while a second client
// subscribes to the same session. A subscription to another session,
// which needs only that session's head, is answered at once instead of
// waiting for the first session's read.
func TestSlowReadOfOneSessionHoldsUpNoOther(t *testing.T) {
	url := pgtest.Database(t)
	// lock_timeout is a quarter of OpTimeout: a read waits up to 5 s.
	db := openDB(t, url, func(o *pgstore.Options) { o.OpTimeout = 20 * time.Second })
	j := db.Journal()
	ctx := context.Background()
	for _, s := range []string{"x", "y"} {
		if err := j.Append(ctx, s, 1, []journal.Record{rec("k", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	subX, err := j.Subscribe(ctx, "x", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer subX.Close()

	tx, watch := lockTable(t, url, "brain_records")
	// A wake-up as another node sends after its commit.
	if _, err := watch.Exec(ctx, `SELECT pg_notify('brain_journal', $1)`, hex.EncodeToString([]byte("x"))+" 2"); err != nil {
		t.Fatal(err)
	}
	waitForLockedQuery(t, watch, "the read of x to wait", "SELECT sequence, kind")
	second := make(chan error, 1)
	go func() {
		sub, err := j.Subscribe(ctx, "x", 1, 0)
		if err == nil {
			sub.Close()
		}
		second <- err
	}()
	waitFor(t, "the second subscription to x to wait", func() bool { return subscribersWaiting() > 0 })

	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	subY, err := j.Subscribe(sctx, "y", 1, 0)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Subscribe to y = %v", err)
	}
	defer subY.Close()
	if took > time.Second {
		t.Errorf("Subscribe to y took %v while a read of x waited", took.Round(time.Millisecond))
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Errorf("second Subscribe to x = %v", err)
	}
}

// TestSubscribeWhileCatchingUpAcrossReads: another node's commits reach
// a followed session while the node reads them in more than one go (its
// first read waits on the database) and a second client subscribes to
// the same session meanwhile. Once the database answers, the reads end,
// the second subscription is answered and delivers the records after its
// cursor, and the journal keeps answering: nothing waits forever.
func TestSubscribeWhileCatchingUpAcrossReads(t *testing.T) {
	url := pgtest.Database(t)
	db := openDB(t, url, func(o *pgstore.Options) { o.OpTimeout = 20 * time.Second })
	j := db.Journal()
	ctx := context.Background()
	if err := j.Append(ctx, "x", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatal(err)
	}
	subX, err := j.Subscribe(ctx, "x", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer subX.Close()

	// Records 2 and 3 committed as another node's append commits them,
	// in a transaction that keeps every reader of the records' table
	// waiting until it ends.
	tx, watch := lockTable(t, url, "brain_records")
	if _, err := tx.Exec(ctx, `INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, data, frame_bytes)
		SELECT 'x'::bytea, n, 'k'::bytea, 1, convert_to('{"n":' || n || '}', 'UTF8'), 64 FROM generate_series(2, 3) n`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE brain_sessions SET next_seq = 4 WHERE session_id = 'x'::bytea`); err != nil {
		t.Fatal(err)
	}
	// A wake-up through a sequence beyond those: the node reads again
	// after the first page.
	if _, err := watch.Exec(ctx, `SELECT pg_notify('brain_journal', $1)`, hex.EncodeToString([]byte("x"))+" 5"); err != nil {
		t.Fatal(err)
	}
	waitForLockedQuery(t, watch, "the read of x to wait", "SELECT sequence, kind")
	type result struct {
		sub *journal.Subscription
		err error
	}
	second := make(chan result, 1)
	go func() {
		sub, err := j.Subscribe(ctx, "x", 1, 0)
		second <- result{sub, err}
	}()
	waitFor(t, "the second subscription to x to wait", func() bool { return subscribersWaiting() > 0 })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var r result
	select {
	case r = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe to x did not return 10 s after the database answered")
	}
	if r.err != nil {
		t.Fatalf("second Subscribe to x = %v", r.err)
	}
	defer r.sub.Close()
	for _, sub := range []*journal.Subscription{subX, r.sub} {
		for want := uint64(2); want <= 3; want++ {
			nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, err := sub.Next(nctx)
			cancel()
			if err != nil || got.Sequence != want {
				t.Fatalf("Next = %d, %v; want %d", got.Sequence, err, want)
			}
		}
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := j.Append(actx, "x", 4, []journal.Record{rec("k", 4)}); err != nil {
		t.Fatalf("Append after the reads = %v", err)
	}
}
