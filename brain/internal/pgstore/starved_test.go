package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestStalledRequestsDoNotCostTheLeases: requests that wait on the
// database (here every read of the journal, behind a lock on its table
// that another node's schema migration could hold) take every connection
// of the node's pool. The node still renews its leases and its membership
// meanwhile, which need nothing of what the requests wait for: it loses
// no session, and other nodes do not take it for dead.
func TestStalledRequestsDoNotCostTheLeases(t *testing.T) {
	url := pgtest.Database(t)
	const lease = time.Second
	var lost atomic.Int32
	db := openDB(t, url, func(o *pgstore.Options) {
		o.NodeID, o.PublicURL = "a", "http://a"
		o.Fenced, o.KeepLeases, o.LeaseDuration, o.OpTimeout, o.MaxConns = true, true, lease, 8*time.Second, 4
	})
	db.OnLeaseLost(func(string, int64) { lost.Add(1) })
	other := openDB(t, url, func(o *pgstore.Options) { o.NodeID, o.LeaseDuration = "b", lease })
	ctx := context.Background()
	if _, err := db.AcquireLease(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if err := db.Journal().Append(ctx, "held", 1, []journal.Record{rec("k", 0)}); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	defer wg.Wait() // after the lock is given up
	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	if _, err := locker.Exec(ctx, `BEGIN; LOCK TABLE brain_records IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		wg.Go(func() { db.Journal().Read(ctx, "held", 0, 0, 0) })
	}
	// Three lease lengths: every lease and the membership need renewing
	// several times over.
	end := time.Now().Add(3 * lease)
	for time.Now().Before(end) {
		ms, err := other.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}
		live := false
		for _, m := range ms {
			live = live || m.NodeID == "a"
		}
		if !live {
			t.Fatal("the node dropped out of the membership while its requests waited on the database")
		}
		if lost.Load() > 0 {
			t.Fatal("the node lost its lease while its requests waited on the database")
		}
		time.Sleep(lease / 10)
	}
	if _, err := locker.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if o, err := other.LeaseOwner(ctx, "held"); err != nil || o.NodeID != "a" || !o.Live {
		t.Fatalf("lease owner = %+v, %v; want a's live lease", o, err)
	}
}
