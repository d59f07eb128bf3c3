package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestLockTimeoutInBatchWaitsOnce: a claim of a key that a node stopped
// mid-batch holds shares a group commit with appends to other sessions.
// The claim waits for its lock once (lock_timeout) and fails as
// unavailable, nothing committed; it is not run again to wait a second
// time, and the appends of its batch commit right after that one wait.
func TestLockTimeoutInBatchWaitsOnce(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	const op = 8 * time.Second
	const lockWait = op / 4 // lock_timeout
	const sessions = 4
	a, b, s := stoppedAndBusy(t, url, op, 30*time.Second, sessions)
	stallBatch(t, a, s, "k1")

	// b's group commit is busy: the claim and the appends queue and go
	// in one batch.
	g := &b.group.batches
	g.mu.Lock()
	g.running = g.inFlight
	g.mu.Unlock()
	var wg sync.WaitGroup
	var start time.Time
	var mu sync.Mutex
	took := func() time.Duration { mu.Lock(); defer mu.Unlock(); return time.Since(start) }
	wg.Go(func() {
		_, _, err := b.Requests(nil).Claim(ctx, "s", "k1", idem.Digest([]byte("k1")))
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("claim of k1, held by the stopped node = %v, want ErrUnavailable (nothing committed)", err)
		}
		if d := took(); d >= lockWait*3/2 {
			t.Errorf("claim of k1, held by the stopped node, failed after %v: it waited for the lock (%v) more than once", d, lockWait)
		}
	})
	for i := range sessions {
		wg.Go(func() {
			err := b.Journal().Append(ctx, fmt.Sprint("b", i), 2, oneRecord())
			if d := took(); err != nil || d >= lockWait*3/2 {
				t.Errorf("append to b%d in the claim's batch = %v after %v, want it committed right after the claim's lock wait (%v)", i, err, d, lockWait)
			}
		})
	}
	for {
		g.mu.Lock()
		n := len(g.pending)
		g.mu.Unlock()
		if n == 1+sessions {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.mu.Lock()
	g.running = 1
	g.mu.Unlock()
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	g.lead(nil, false)
	g.mu.Lock()
	g.running = 0
	g.mu.Unlock()
	wg.Wait()
	for i := range sessions {
		if next, err := b.Journal().Next(ctx, fmt.Sprint("b", i)); err != nil || next != 3 {
			t.Errorf("Next of b%d = %d, %v; want 3", i, next, err)
		}
	}
}
