package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// forEach runs f on every id of ids, from a few goroutines, and answers
// the first error.
func forEach(ids []string, f func(id string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan string)
	for range 8 {
		wg.Go(func() {
			for id := range next {
				if err := f(id); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return first
}

// TestCloseReleasesManyLeases: a node holding ten thousand leases gives
// them all back when it closes, and leaves the membership, within its
// budget of one operation's time: another node takes every one of those
// sessions at once, not after the leases (a minute here) run out.
func TestCloseReleasesManyLeases(t *testing.T) {
	url := pgtest.Database(t)
	const many = 10000
	opts := func(o *pgstore.Options) { o.LeaseDuration, o.OpTimeout = time.Minute, 3*time.Second }
	a, b := openDB(t, url, opts), openDB(t, url, opts)
	ids := make([]string, many)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%05d", i)
	}
	ctx := context.Background()
	if err := forEach(ids, func(id string) error { _, err := a.AcquireLease(ctx, id); return err }); err != nil {
		t.Fatal(err)
	}
	a.Close()
	var members int
	sqlScan(t, url, `SELECT count(*) FROM brain_nodes WHERE node_id = $1 AND expires_at > now()`, &members, a.NodeID())
	if members != 0 {
		t.Errorf("the closed node is still a live member")
	}
	var held int
	sqlScan(t, url, `SELECT count(*) FROM brain_leases WHERE node_id = $1 AND expires_at > now()`, &held, a.NodeID())
	if held != 0 {
		t.Errorf("the closed node still holds %d of its %d leases", held, many)
	}
	taken := 0
	var mu sync.Mutex
	err := forEach(ids, func(id string) error {
		if _, err := b.AcquireLease(ctx, id); err != nil {
			return err
		}
		mu.Lock()
		taken++
		mu.Unlock()
		return nil
	})
	if taken != many {
		t.Fatalf("another node took %d of the %d sessions of the closed node at once: %v", taken, many, err)
	}
}
