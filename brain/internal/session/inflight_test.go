package session

import (
	"sync"
	"testing"
)

// Close's wait ends when the count is zero, and work may start from zero
// at any time, also while Close waits (a WaitGroup forbids that: the race
// detector reports it and Wait may panic).
func TestInflightCountsWorkStartedWhileWaiting(t *testing.T) {
	var w inflight
	if !isClosed(w.Idle()) {
		t.Fatal("nothing in flight, yet the wait did not end")
	}

	var w2 inflight
	w2.Add(1)
	idle := w2.Idle()
	if isClosed(idle) {
		t.Fatal("the wait ended with work in flight")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				w2.Add(1)
				w2.Done()
			}
		}()
	}
	wg.Wait()
	if isClosed(idle) {
		t.Fatal("the wait ended while the first unit of work was still in flight")
	}
	w2.Done()
	if !isClosed(idle) {
		t.Fatal("the wait did not end once nothing was in flight")
	}
	// Work after the wait ended is counted and does not reopen it.
	w2.Add(1)
	if !isClosed(w2.Idle()) {
		t.Fatal("the ended wait reopened")
	}
	w2.Done()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
