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

// TestCloseWhileOwningAndReleasing: sessions taken and given back while
// the node closes leave no lease held once Close returned, and Close
// neither panics nor leaves work of the node running: another node takes
// every one of them at once, long before a lease would have expired.
func TestCloseWhileOwningAndReleasing(t *testing.T) {
	url := pgtest.Database(t)
	const (
		rounds   = 12
		sessions = 8
	)
	long := func(o *pgstore.Options) { o.LeaseDuration = time.Minute }
	for round := range rounds {
		a := openDB(t, url, long)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var (
			wg     sync.WaitGroup
			cycles atomic.Int64
			closed atomic.Bool
		)
		ids := make([]string, sessions)
		for i := range ids {
			ids[i] = fmt.Sprintf("ses_closerace%02d%012d", round, i)
			wg.Go(func() {
				// Keep owning and releasing until a while after Close
				// returned.
				for after := 0; after < 3; {
					if closed.Load() {
						after++
					}
					epoch, err := a.Own(ctx, ids[i])
					if err != nil {
						if ctx.Err() != nil {
							return
						}
						continue
					}
					cycles.Add(1)
					a.Release(ids[i], epoch)
				}
			})
		}
		for cycles.Load() < int64(4*sessions) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		a.Close()
		closed.Store(true)
		wg.Wait()
		b := openDB(t, url, long)
		for _, id := range ids {
			octx, ocancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := b.Own(octx, id)
			ocancel()
			if err != nil {
				cancel()
				t.Fatalf("round %d: after the first node closed, Own(%s) on another = %v; want the lease free", round, id, err)
			}
		}
		b.Close()
		cancel()
	}
}
