package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRouteDoesNotTakeACreationsLease routes writes to sessions that a
// node is creating at that moment (it took the lease, its first append
// has not committed). The creations commit: a write routed on the same
// node never gives back the lease the creation holds, and one routed on
// another node never holds the lease, so the creation never finds the
// session owned elsewhere. A routed write to a session that does not
// exist is this node's to answer (not found): it takes no lease.
func TestRouteDoesNotTakeACreationsLease(t *testing.T) {
	url := pgtest.Database(t)
	node := func(id string) func(*pgstore.Options) {
		return func(o *pgstore.Options) {
			o.Fenced, o.KeepLeases, o.NodeID, o.PublicURL, o.LeaseDuration = true, true, id, "http://"+id, 10*time.Second
		}
	}
	a, b := openDB(t, url, node("a")), openDB(t, url, node("b"))
	ctx := context.Background()

	const creations = 40
	var wg sync.WaitGroup
	for i := range creations {
		id := fmt.Sprint("created-", i)
		router := a
		if i%2 == 1 {
			router = b
		}
		routed := make(chan struct{})
		wg.Go(func() {
			defer close(routed)
			to, err := router.Route(ctx, id)
			if err != nil || to != "" && to != "http://a" {
				t.Errorf("Route of %s on %s = %q, %v; want this node or a", id, router.NodeID(), to, err)
			}
		})
		wg.Go(func() {
			// As a creation: take the lease, check that the session is
			// new, commit its first record once the route has ended.
			epoch, err := a.Own(ctx, id)
			if err != nil {
				t.Errorf("Own of %s, routed at the same time on %s = %v", id, router.NodeID(), err)
				return
			}
			if next, err := a.Journal().Next(ctx, id); err != nil || next != 1 {
				t.Errorf("Next of %s = %d, %v; want 1", id, next, err)
				return
			}
			<-routed
			if held, ok := a.Held(id); !ok || held != epoch {
				t.Errorf("lease of %s after a write was routed on %s: %d, %v; want %d, held", id, router.NodeID(), held, ok, epoch)
			}
			if err := a.Journal().Append(ctx, id, 1, []journal.Record{rec("k", 1)}); err != nil {
				t.Errorf("first append of %s, routed at the same time on %s = %v", id, router.NodeID(), err)
			}
		})
	}
	wg.Wait()

	for _, db := range []*pgstore.DB{a, b} {
		if to, err := db.Route(ctx, "never-created"); err != nil || to != "" {
			t.Fatalf("Route of a session that does not exist on %s = %q, %v; want this node", db.NodeID(), to, err)
		}
		o, err := db.LeaseOwner(ctx, "never-created")
		if err != nil || o.Live {
			t.Fatalf("lease of a session that does not exist after a route on %s = %+v, %v; want none live", db.NodeID(), o, err)
		}
	}
}
