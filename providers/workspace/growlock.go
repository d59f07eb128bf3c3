package workspace

import "context"

// growLock is a mutex whose waiters give up when their context ends: an
// operation that waits for a write or edit of the workspace to finish
// still answers at its deadline or cancel.
type growLock struct {
	ch chan struct{}
}

func newGrowLock() *growLock { return &growLock{ch: make(chan struct{}, 1)} }

// Lock takes the lock, waiting as long as it takes.
func (l *growLock) Lock() { l.ch <- struct{}{} }

// Unlock releases the lock taken.
func (l *growLock) Unlock() { <-l.ch }

// lockContext takes the lock, or answers ctx's cause once ctx ends first.
func (l *growLock) lockContext(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
