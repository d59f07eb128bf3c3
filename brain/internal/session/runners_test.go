package session

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goid answers the calling goroutine's id, from its stack header.
func goid() uint64 {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// allStacks answers the stacks of every goroutine.
func allStacks() []byte {
	b := make([]byte, 1<<20)
	for {
		n := runtime.Stack(b, true)
		if n < len(b) {
			return b[:n]
		}
		b = make([]byte, 2*len(b))
	}
}

// runnerGoroutines counts the goroutines in runners.loop.
func runnerGoroutines() int {
	return bytes.Count(allStacks(), []byte("session.(*runners).loop("))
}

// waitIdle waits until n runners wait.
func waitIdle(t *testing.T, r *runners, n int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); r.idle.Load() != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runners wait, want %d", r.idle.Load(), n)
		}
	}
}

// waitParked waits until n runners wait and the goroutine with id g is
// parked in the runners' select: a runner counts itself idle just before
// it starts waiting for work, and a run handed over in between goes to a
// new goroutine.
func waitParked(t *testing.T, r *runners, n int32, g uint64) {
	t.Helper()
	header := []byte("goroutine " + strconv.FormatUint(g, 10) + " [select")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if r.idle.Load() == n {
			b := allStacks()
			if i := bytes.Index(b, header); i >= 0 {
				rest := b[i:]
				if end := bytes.Index(rest, []byte("\n\n")); end >= 0 {
					rest = rest[:end]
				}
				if bytes.Contains(rest, []byte("session.(*runners).loop(")) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runners wait, want %d with goroutine %d among them", r.idle.Load(), n, g)
		}
	}
}

// A run after another has ended goes to the goroutine that ran the
// first (and so to the stack it grew); runs at once each get a goroutine.
func TestRunnersReuseAWaitingGoroutine(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	var r runners
	r.init(done, 4, time.Minute)
	ids := make(chan uint64, 1)
	r.run(func() { ids <- goid() })
	first := <-ids
	waitParked(t, &r, 1, first)
	r.run(func() { ids <- goid() })
	if second := <-ids; second != first {
		t.Fatalf("the second run went to goroutine %d, not to the waiting %d", second, first)
	}
	// Two runs at once: one waiting runner, one new goroutine.
	waitParked(t, &r, 1, first)
	var wg sync.WaitGroup
	block := make(chan struct{})
	got := make(chan uint64, 2)
	for range 2 {
		wg.Add(1)
		r.run(func() { defer wg.Done(); got <- goid(); <-block })
	}
	a, b := <-got, <-got
	close(block)
	wg.Wait()
	if a == b {
		t.Fatalf("two runs at once shared goroutine %d", a)
	}
}

// At most maxIdle runners wait; the others end, as do those that waited
// idleFor, and all of them when the engine ends.
func TestRunnersBoundedAndEnding(t *testing.T) {
	done := make(chan struct{})
	var r runners
	r.init(done, 3, 200*time.Millisecond)
	settle := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); runnerGoroutines() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d runner goroutines left, want %d", runnerGoroutines(), want)
			}
		}
	}
	// Other tests' engines end theirs within a second.
	settle(0)
	block := make(chan struct{})
	var started sync.WaitGroup
	for range 10 {
		started.Add(1)
		r.run(func() { started.Done(); <-block })
	}
	started.Wait()
	if g := runnerGoroutines(); g != 10 {
		t.Fatalf("%d goroutines run 10 blocked functions", g)
	}
	close(block)
	waitIdle(t, &r, 3)
	settle(3)
	// Waiting longer than idleFor ends them.
	waitIdle(t, &r, 0)
	settle(0)
	// The engine's end ends the waiting ones at once.
	r.init(done, 3, time.Hour)
	var both sync.WaitGroup
	both.Add(2)
	for range 2 {
		r.run(func() { both.Done(); both.Wait() })
	}
	waitIdle(t, &r, 2)
	close(done)
	waitIdle(t, &r, 0)
	settle(0)
}
