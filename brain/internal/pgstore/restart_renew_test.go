package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRestartShorterThanALeaseKeepsTheNode restarts PostgreSQL (down for
// under half a lease length) just before a renewal is due, so that the
// outage spans two renewal times. A healthy node keeps its leases and its
// membership: a renewal that failed is tried again soon once the
// database answers, not at the next third of the lease length, when the
// leases renewed before the outage have run out. Nothing of the outage
// sticks: the node appends under its leases afterwards.
func TestRestartShorterThanALeaseKeepsTheNode(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	// Long enough that a server slow to start on a loaded machine still
	// comes back well before the leases run out.
	const lease = 21 * time.Second
	const tick = lease / 3
	const sessions = 3
	n := openLeasedNode(t, url, lease, 3*time.Second, sessions)
	db := n.db
	ctx := context.Background()

	// Little WAL to replay: the server starts again soon.
	sqlExec(t, url, "CHECKPOINT")
	// A renewal just committed at renewed: the next is due a tick later.
	var first, at time.Time
	sqlScan(t, url, `SELECT expires_at FROM brain_leases WHERE session_id = 's0'::bytea`, &first)
	for at = first; at.Equal(first); {
		time.Sleep(10 * time.Millisecond)
		sqlScan(t, url, `SELECT expires_at FROM brain_leases WHERE session_id = 's0'::bytea`, &at)
	}
	renewed := time.Now()
	time.Sleep(time.Until(renewed.Add(tick - 300*time.Millisecond)))
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	// Down across the next two renewal times.
	time.Sleep(time.Until(renewed.Add(2*tick + 100*time.Millisecond)))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Since(renewed)
	t.Logf("the database was back %v after the last renewal", up)
	if up > lease-2*time.Second {
		t.Fatalf("the database took until %v after the last renewal to start again: too late to renew leases of %v", up, lease)
	}

	// Before the leases renewed at renewed run out, they and the
	// membership were renewed again.
	time.Sleep(time.Until(renewed.Add(lease - 600*time.Millisecond)))
	var left float64
	sqlScan(t, url, `SELECT extract(epoch FROM expires_at - now())::float8 FROM brain_nodes WHERE node_id = 'a'`, &left)
	if left < (lease / 2).Seconds() {
		t.Errorf("%v after the last renewal, the membership runs out in %.1fs: not renewed since the database came back (%v after it)", time.Since(renewed), left, up)
	}
	for i := range sessions {
		sqlScan(t, url, `SELECT extract(epoch FROM expires_at - now())::float8 FROM brain_leases WHERE session_id = $1::bytea`, &left, []byte(fmt.Sprint("s", i)))
		if left < (lease / 2).Seconds() {
			t.Errorf("%v after the last renewal, the lease of s%d runs out in %.1fs: not renewed since the database came back (%v after it)", time.Since(renewed), i, left, up)
		}
	}
	time.Sleep(time.Until(renewed.Add(lease + tick)))
	if lost := n.lostLeases(); len(lost) > 0 {
		t.Errorf("leases reported lost across a restart of %v: %v", up, lost)
	}
	for i := range sessions {
		id := fmt.Sprint("s", i)
		if err := db.Journal().Append(ctx, id, 2, []journal.Record{rec("k", 1)}); err != nil {
			t.Errorf("append to %s after the restart = %v", id, err)
		}
	}
	ms, err := db.Members(ctx)
	if err != nil || len(ms) != 1 || ms[0].NodeID != "a" {
		t.Errorf("Members after the restart = %v, %v; want a", ms, err)
	}
}
