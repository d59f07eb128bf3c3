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

// TestLockTimeoutsInBatchHoldOnlyTheirKeys: claims of several keys that
// a node stopped mid-batch holds share a group commit with claims of
// free keys and appends to other sessions. Once the batch is rolled back
// (its first held key waited lock_timeout), each held key's claim waits
// for its lock at most once more, not after the others: the claims of
// the free keys and the appends commit right after, well within their
// operation timeout, and every held key's claim fails as unavailable.
func TestLockTimeoutsInBatchHoldOnlyTheirKeys(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	const op = 6 * time.Second
	const lockWait = op / 4 // lock_timeout
	const sessions, held, free = 4, 4, 4
	a, b, s := stoppedAndBusy(t, url, op, 30*time.Second, sessions)
	var heldKeys []string
	for i := range held {
		heldKeys = append(heldKeys, fmt.Sprint("k", i))
	}
	stallBatch(t, a, s, heldKeys...)

	// b's group commit is busy: everything queues and goes in one batch.
	g := &b.group.batches
	g.mu.Lock()
	g.running = g.inFlight
	g.mu.Unlock()
	var wg sync.WaitGroup
	var start time.Time
	var mu sync.Mutex
	took := func() time.Duration { mu.Lock(); defer mu.Unlock(); return time.Since(start) }
	r := b.Requests(nil)
	for _, k := range heldKeys {
		wg.Go(func() {
			_, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
			if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("claim of %s, held by the stopped node = %v, want ErrUnavailable (nothing committed)", k, err)
			}
			if d := took(); d >= lockWait*11/4 {
				t.Errorf("claim of %s, held by the stopped node, failed after %v: it waited behind other keys' locks (lock_timeout %v)", k, d, lockWait)
			}
		})
	}
	for i := range free {
		k := fmt.Sprint("u", i)
		wg.Go(func() {
			_, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
			if d := took(); err != nil || d >= 2*lockWait {
				t.Errorf("claim of the free key %s in the batch = %v after %v, want it claimed right after the batch's lock wait (%v)", k, err, d, lockWait)
			}
		})
	}
	for i := range sessions {
		wg.Go(func() {
			err := b.Journal().Append(ctx, fmt.Sprint("b", i), 2, oneRecord())
			if d := took(); err != nil || d >= 2*lockWait {
				t.Errorf("append to b%d in the batch = %v after %v, want it committed right after the batch's lock wait (%v)", i, err, d, lockWait)
			}
		})
	}
	for {
		g.mu.Lock()
		n := len(g.pending)
		g.mu.Unlock()
		if n == held+free+sessions {
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
			t.Errorf("Next of b%d = %d, %v; want 3 (appended once)", i, next, err)
		}
	}
	var n int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM brain_requests WHERE key LIKE 'u%' AND instance = $1`, b.instance).Scan(&n); err != nil || n != free {
		t.Errorf("claims of the free keys committed = %d, %v; want %d", n, err, free)
	}
}
