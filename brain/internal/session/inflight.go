package session

import "sync"

// inflight counts the work Close waits for: admitted writes, activations,
// tool deliveries, cancels and turn-end calls. Unlike a sync.WaitGroup it
// may be incremented from zero while Close waits (a background tool's
// deadline firing sends a cancel at any time): the count is guarded by
// its own lock, and Close's wait ends the first time it is zero.
type inflight struct {
	mu      sync.Mutex
	n       int
	waiting bool
	idle    chan struct{} // closed once n is zero while waiting
}

// Add adds delta (positive) to the count.
func (w *inflight) Add(delta int) {
	w.mu.Lock()
	w.n += delta
	w.mu.Unlock()
}

// Done ends one unit of work.
func (w *inflight) Done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n--
	if w.n < 0 {
		panic("session: inflight count below zero")
	}
	w.settleLocked()
}

// Idle answers a channel closed once the count has been zero since the
// first call; work added after that is still counted (and must still be
// done) but does not reopen it.
func (w *inflight) Idle() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.waiting {
		w.waiting, w.idle = true, make(chan struct{})
		w.settleLocked()
	}
	return w.idle
}

func (w *inflight) settleLocked() {
	if w.waiting && w.n == 0 {
		select {
		case <-w.idle:
		default:
			close(w.idle)
		}
	}
}
