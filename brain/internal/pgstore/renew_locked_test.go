package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestLockedLeaseRowCostsOnlyItsLease: another node stopped (SIGSTOP, a
// hung host) in the middle of trying to take one of this node's leases
// keeps that lease row locked for longer than a lease. The node keeps
// its other leases: they stay live in the database and none of them is
// reported lost. The locked lease, which cannot be renewed, is reported
// lost once it ran out.
func TestLockedLeaseRowCostsOnlyItsLease(t *testing.T) {
	url := pgtest.Database(t)
	const lease, op = 3 * time.Second, 4 * time.Second // lock_timeout op/4
	const sessions = 3
	n := openLeasedNode(t, url, lease, op, sessions)
	ctx := context.Background()
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)

	// Node b sends the first statement of its attempt to take s1 and
	// stops before the rest: the upsert, refused by its condition, keeps
	// the row locked in a transaction waiting for its client.
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "brain"
	stopped, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stopped.Close(ctx)
	p := stopped.PgConn().StartPipeline(ctx)
	p.SendQueryParams(`INSERT INTO brain_leases AS l (session_id, node_id, epoch, expires_at)
			VALUES ($1, 'b', 1, now() + interval '3 seconds')
			ON CONFLICT (session_id) DO UPDATE
			SET node_id = EXCLUDED.node_id, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
			WHERE l.expires_at <= now() OR l.node_id = EXCLUDED.node_id`,
		[][]byte{[]byte("s1")}, []uint32{pgtype.ByteaOID}, []int16{1}, nil)
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		var waiting bool
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE pid = $1 AND state = 'active' AND wait_event = 'ClientRead')`, stopped.PgConn().PID()).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	locked := time.Now()

	// Over more than a lease length, s0 and s2 stay live.
	var lapsed string
	for end := locked.Add(lease + lease/3 + 500*time.Millisecond); time.Now().Before(end) && lapsed == ""; time.Sleep(20 * time.Millisecond) {
		var live int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM brain_leases
			WHERE session_id IN ('s0'::bytea, 's2'::bytea) AND node_id = 'a' AND expires_at > now()`).Scan(&live)
		if err != nil {
			t.Fatal(err)
		}
		if live != 2 {
			lapsed = fmt.Sprintf("%d of the 2 unlocked leases live %v after s1's row was locked", live, time.Since(locked).Round(time.Millisecond))
		}
	}
	if lapsed != "" {
		t.Error(lapsed)
	}
	for _, id := range []string{"s0", "s2"} {
		if n.reportedLost(id) {
			t.Errorf("the lease of %s was reported lost because another lease's row was locked", id)
		}
	}
	if !n.reportedLost("s1") {
		t.Error("the lease of s1, whose row stayed locked for longer than a lease, was not reported lost")
	}
}
