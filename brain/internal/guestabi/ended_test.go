package guestabi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/guestabi"
)

// stalled is a context whose deadline has passed but whose timer has not
// run, as in a guest that computed past it without pausing.
type stalled struct{ context.Context }

func (stalled) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestEnded(t *testing.T) {
	if err := guestabi.Ended(context.Background()); err != nil {
		t.Errorf("a live context: %v", err)
	}
	ahead, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := guestabi.Ended(ahead); err != nil {
		t.Errorf("a context before its deadline: %v", err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := guestabi.Ended(cancelled); !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
		t.Errorf("a cancelled context: %v, want context.Canceled", err)
	}

	cause := errors.New("given up")
	withCause, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	if err := guestabi.Ended(withCause); !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("a context cancelled with a cause: %v, want context.Canceled and the cause", err)
	}

	if err := guestabi.Ended(stalled{context.Background()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a context past its deadline, its timer not run: %v, want context.DeadlineExceeded", err)
	}
}
