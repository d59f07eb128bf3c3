package pgstore_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestSubscribeAfterAFailedOneReadsTheHead: a subscription to a session
// nobody on the node follows yet fails while it reads the session's head
// (the caller gave up, the database did not answer in time), and a second
// subscription to the same session waited for it meanwhile. The second
// one reads the head itself: it delivers the committed records after its
// cursor, as if it had come alone, rather than the session's whole
// journal again, which ends it with ErrLagged once the journal is longer
// than its backlog.
func TestSubscribeAfterAFailedOneReadsTheHead(t *testing.T) {
	url := pgtest.Database(t)
	db := openDB(t, url, nil)
	j := db.Journal()
	ctx := context.Background()
	const session = "s"
	for i := 1; i <= 5; i++ {
		if err := j.Append(ctx, session, uint64(i), []journal.Record{rec("k", i)}); err != nil {
			t.Fatal(err)
		}
	}

	// Reads of the session's head wait while another transaction holds
	// the table.
	tx, watch := lockTable(t, url, "brain_sessions")

	firstCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	firstErr := make(chan error, 1)
	go func() {
		sub, err := j.Subscribe(firstCtx, session, 3, 2)
		if err == nil {
			sub.Close()
		}
		firstErr <- err
	}()
	waitForLockedQuery(t, watch, "the first subscription to wait for the head", "SELECT next_seq FROM brain_sessions")

	type result struct {
		sub *journal.Subscription
		err error
	}
	second := make(chan result, 1)
	go func() {
		sub, err := j.Subscribe(ctx, session, 3, 2)
		second <- result{sub, err}
	}()
	waitFor(t, "the second subscription to wait for the first", func() bool {
		return subscribersWaiting() > 0
	})

	giveUp()
	if err := <-firstErr; err == nil {
		t.Fatal("Subscribe with a context cancelled while it read the head succeeded")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-second
	if r.err != nil {
		t.Fatalf("second Subscribe = %v", r.err)
	}
	defer r.sub.Close()
	for want := uint64(4); want <= 5; want++ {
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := r.sub.Next(nctx)
		cancel()
		if err != nil || got.Sequence != want {
			t.Fatalf("Next = %d, %v; want %d", got.Sequence, err, want)
		}
	}
}

// subscribersWaiting counts the goroutines inside Journal.Subscribe that
// wait for a lock.
func subscribersWaiting() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "pgstore.(*Journal).Subscribe(") && strings.Contains(g, "sync.(*Mutex).Lock") {
			n++
		}
	}
	return n
}

// lockTable holds table in ACCESS EXCLUSIVE mode in a transaction of its
// own, which keeps every reader of it waiting until tx ends, and answers
// that transaction and another connection to watch the waiting with.
func lockTable(t *testing.T, url, table string) (tx pgx.Tx, watch *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	if tx, err = admin.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	if watch, err = pgx.Connect(ctx, url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close(ctx) })
	return tx, watch
}

// waitForLockedQuery waits until a query of the database starting with
// prefix waits for a lock.
func waitForLockedQuery(t *testing.T, watch *pgx.Conn, what, prefix string) {
	t.Helper()
	waitFor(t, what, func() bool {
		var n int
		err := watch.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND starts_with(query, $1)`, prefix).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
