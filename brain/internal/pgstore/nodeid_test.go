package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestNodeIDOfALiveNodeRefused: a second node opened with the NodeID of
// a live node on the same database is refused by an error naming the
// id, and leaves the first node's membership (its public URL, where
// other nodes forward its sessions' writes) and leases as they were.
// Once the first node closed, the id opens again.
func TestNodeIDOfALiveNodeRefused(t *testing.T) {
	url := pgtest.Database(t)
	const id = "twin-node-7"
	a := openDB(t, url, func(o *pgstore.Options) {
		o.NodeID, o.PublicURL, o.Fenced, o.KeepLeases = id, "http://a.example", true, true
	})
	ctx := context.Background()
	l, err := a.AcquireLease(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := pgstore.Open(octx, pgstore.Options{URL: url, SealingKey: testKey, NodeID: id, PublicURL: "http://b.example",
		Fenced: true, LeaseDuration: 2 * time.Second, OpTimeout: 5 * time.Second})
	if err == nil {
		// The second node may take the first one's sessions as its own.
		if _, lerr := b.AcquireLease(ctx, "s1"); lerr == nil {
			t.Errorf("the second node under id %q took the lease the first holds", id)
		}
		b.Close()
		t.Fatalf("Open under the id of a live node succeeded")
	}
	if !errors.Is(err, pgstore.ErrNodeIDInUse) || !strings.Contains(err.Error(), id) {
		t.Fatalf("Open under the id of a live node = %v; want ErrNodeIDInUse naming %q", err, id)
	}
	ms, err := a.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].NodeID != id || ms[0].PublicURL != "http://a.example" {
		t.Errorf("members = %+v; want only %s at http://a.example", ms, id)
	}
	if err := a.Journal().Append(ctx, "s1", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Errorf("the first node's append under its lease = %v", err)
	}
	if _, err := a.RenewLease(ctx, l); err != nil {
		t.Errorf("the first node's lease renewal = %v", err)
	}
	a.Close()
	c := openDB(t, url, func(o *pgstore.Options) { o.NodeID, o.PublicURL = id, "http://c.example" })
	if ms, err := c.Members(ctx); err != nil || len(ms) != 1 || ms[0].PublicURL != "http://c.example" {
		t.Errorf("members after the first node closed = %+v, %v; want %s at http://c.example", ms, err, id)
	}
}

// TestNodeIDOfAStoppedNodeReused: a node restarted under the id of a
// process that stopped without leaving the membership (its row still
// unexpired, no longer renewed) opens once that row runs out, and takes
// the id's leases again.
func TestNodeIDOfAStoppedNodeReused(t *testing.T) {
	url := pgtest.Database(t)
	const id = "restarted-node-3"
	openDB(t, url, nil).Close() // the schema
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The stopped process's last heartbeat and lease.
	if _, err := conn.Exec(ctx, `INSERT INTO brain_nodes (node_id, instance, public_url, joined_at, expires_at)
		VALUES ($1, 'stopped', 'http://old.example', now(), now() + interval '1.5 seconds')`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO brain_leases (session_id, node_id, epoch, expires_at)
		VALUES ('s1', $1, 4, now() + interval '1 minute')`, id); err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := pgstore.Open(octx, pgstore.Options{URL: url, SealingKey: testKey, NodeID: id, PublicURL: "http://new.example",
		LeaseDuration: 2 * time.Second, OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open under the id of a stopped node = %v", err)
	}
	defer db.Close()
	if ms, err := db.Members(ctx); err != nil || len(ms) != 1 || ms[0].PublicURL != "http://new.example" {
		t.Errorf("members = %+v, %v; want %s at http://new.example", ms, err, id)
	}
	if l, err := db.AcquireLease(ctx, "s1"); err != nil || l.Epoch != 5 {
		t.Errorf("AcquireLease of the stopped process's session = %+v, %v; want epoch 5", l, err)
	}
}
