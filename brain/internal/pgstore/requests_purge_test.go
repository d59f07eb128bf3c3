package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestPurgePassesOverAHeldRow: the purge of expired answers is not held
// up by one expired row that another transaction keeps locked (a process
// stopped while it claimed that key): every other expired answer is
// forgotten, and the answers within retention are kept.
func TestPurgePassesOverAHeldRow(t *testing.T) {
	url := pgtest.Database(t)
	// The purge is paced by the node's clock: at most one an hour.
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	r := openDB(t, url, nil).Requests(&idem.Options{Retention: time.Hour, Now: now})
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	for _, k := range []string{"old-1", "old-2", "held", "recent"} {
		c, _, err := r.Claim(ctx, "s", k, d)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Answer(200, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	sqlExec(t, url, `UPDATE brain_requests SET claimed_at = claimed_at - interval '2 hours', at = at - interval '2 hours' WHERE key <> 'recent'`)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM brain_requests WHERE key = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// A claim of another key runs the purge, which is due again.
	clock.Add(int64(2 * time.Hour))
	c, _, err := r.Claim(ctx, "s", "new", d)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	count := func() int {
		var n int
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if err := c.QueryRow(ctx, `SELECT count(*) FROM brain_requests WHERE key IN ('old-1', 'old-2')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(15 * time.Second)
	for count() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := count(); n != 0 {
		t.Errorf("%d expired answers left after the purge", n)
	}
	if _, ans, err := r.Claim(ctx, "s", "recent", d); err != nil || ans == nil || string(ans.Body) != "recent" {
		t.Errorf("Claim of an answer within retention = %+v, %v; want it replayed", ans, err)
	}
}
