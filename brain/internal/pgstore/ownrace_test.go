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

// TestConcurrentOwnKeepsTheNewestLease: requests to a session no node
// holds, arriving together at one node, each take its lease (each raising
// the epoch). The lease the node keeps is the one it took last, which
// the database fences appends on: whatever order the answers arrive in,
// the node's next append commits.
func TestConcurrentOwnKeepsTheNewestLease(t *testing.T) {
	url := pgtest.Database(t)
	db := openDB(t, url, func(o *pgstore.Options) { o.Fenced = true; o.LeaseDuration = time.Minute })
	ctx := context.Background()
	for round := range 40 {
		s := fmt.Sprint("s", round)
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if _, err := db.Own(ctx, s); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		held, ok := db.Held(s)
		o, err := db.LeaseOwner(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || held != o.Epoch {
			t.Fatalf("round %d: the node keeps epoch %d (held %v), the database's lease is epoch %d", round, held, ok, o.Epoch)
		}
		if err := db.Journal().Append(ctx, s, 1, []journal.Record{rec("k", round)}); err != nil {
			t.Fatalf("round %d: append under the held lease = %v", round, err)
		}
	}
}
