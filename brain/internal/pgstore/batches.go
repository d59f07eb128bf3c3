package pgstore

import (
	"slices"
	"sync"
)

// batches gathers the operations that wait at the same moment and runs
// them in batches of at most max: the first waiters lead (at most
// inFlight at once), each running batches of what is pending until its own
// operation is done, then handing its place over to a goroutine while more
// is pending. Group commit (grouper) and grouped key reads (keyReader)
// share it.
type batches[T any] struct {
	inFlight, max int
	run           func(batch []T) // runs one batch; every op of it is done after
	done          func(op T) bool // reports whether op is done

	mu      sync.Mutex
	pending []T
	running int
}

// add queues op and, when a place is free, leads until op is done.
func (b *batches[T]) add(op T) {
	b.mu.Lock()
	b.pending = append(b.pending, op)
	lead := b.running < b.inFlight
	if lead {
		b.running++
	}
	b.mu.Unlock()
	if lead {
		b.lead(op, true)
	}
}

// lead runs batches of what is pending until own (when owned) is done,
// then hands its place over to a goroutine, which ends at once when
// nothing is pending.
func (b *batches[T]) lead(own T, owned bool) {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.max)
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch := slices.Clone(b.pending[:n])
		clear(b.pending[:n])
		b.pending = b.pending[n:]
		if len(b.pending) == 0 {
			b.pending = nil
		}
		b.mu.Unlock()
		b.run(batch)
		if owned && b.done(own) {
			var none T
			go b.lead(none, false)
			return
		}
	}
}

// closed reports whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
