package guestabi

import (
	"context"
	"fmt"
	"time"
)

// Ended answers nil while ctx is live and, once it has ended, an error
// wrapping ctx's error and its cause, if that differs: a guest SDK
// refuses a service call under an ended ctx before it reaches the host,
// where, once made, a call runs until it answers. A deadline counts once
// passed: a wasip1 guest has one thread and runs its timers only when its
// goroutines pause, so a guest that computed past the deadline would
// still find ctx live.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		if cause := context.Cause(ctx); cause != err {
			return fmt.Errorf("%w: %w", err, cause)
		}
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
