package envsdk

import (
	"context"
	"sync"
)

// Lazy is a sticky, lazily allocated value shared by concurrent first
// callers. The zero value is ready to use.
//
// The first Get runs alloc; every Get that arrives while it runs waits for
// the same allocation. A failed allocation stays failed: later callers get
// the same error without running alloc again, until Reset.
type Lazy[T any] struct {
	mu   sync.Mutex
	call *lazyCall[T]
}

type lazyCall[T any] struct {
	done chan struct{}
	val  T
	err  error
}

// Get returns the value, allocating it on first use. alloc runs with a
// context that is not cancelled when this caller gives up, since other
// callers may be waiting for the same allocation; Get itself returns early
// with ctx's error when ctx ends first.
func (l *Lazy[T]) Get(ctx context.Context, alloc func(ctx context.Context) (T, error)) (T, error) {
	l.mu.Lock()
	c := l.call
	if c == nil {
		c = &lazyCall[T]{done: make(chan struct{})}
		l.call = c
		go func() {
			defer close(c.done)
			defer func() {
				if r := recover(); r != nil {
					c.err = Failf("allocation_failed", "allocation panicked: %v", r)
				}
			}()
			c.val, c.err = alloc(context.WithoutCancel(ctx))
		}()
	}
	l.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// Reset forgets the value or the failure; the next Get allocates again.
// An allocation still running is not interrupted, but its result is
// dropped for later callers.
func (l *Lazy[T]) Reset() {
	l.mu.Lock()
	l.call = nil
	l.mu.Unlock()
}

// Peek returns the outcome of a finished allocation without starting one;
// done is false when nothing has finished allocating.
func (l *Lazy[T]) Peek() (v T, err error, done bool) {
	l.mu.Lock()
	c := l.call
	l.mu.Unlock()
	if c == nil {
		return v, nil, false
	}
	select {
	case <-c.done:
		return c.val, c.err, true
	default:
		return v, nil, false
	}
}
