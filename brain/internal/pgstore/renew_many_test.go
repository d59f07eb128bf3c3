package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestManyLeasesKeptAlive: a node that holds many sessions' leases (idle
// sessions kept in memory) keeps every one of them while the database
// answers: none is reported lost, and so no session is stopped, over
// several lease lengths. Renewing them one statement each took longer
// than the lease, so most ran out every cycle.
func TestManyLeasesKeptAlive(t *testing.T) {
	url := pgtest.Database(t)
	// Two seconds: with a lease of one second, a machine whose cores were
	// taken by other tests renewed the batches too slowly a cycle, and a
	// third of the leases ran out.
	const lease = 2 * time.Second
	db := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.KeepLeases, o.LeaseDuration = true, true, lease })
	var lost atomic.Int64
	db.OnLeaseLost(func(string, int64) { lost.Add(1) })
	const n = 3000
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if _, err := db.AcquireLease(ctx, fmt.Sprintf("ses_many%020d", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("acquired %d leases in %v", n, time.Since(start))
	time.Sleep(3 * lease)
	if l := lost.Load(); l != 0 {
		t.Fatalf("%d of %d leases reported lost while the database answered", l, n)
	}
}
