package loophost

import (
	"context"
	"errors"
	"fmt"
	"time"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// ErrBusy is wrapped when a lookup of a module by id (Func, Resolve,
// ParseToolImplementation) gave up after lookupBound, waiting for the
// admission or compilation of another module, or for the cluster's store
// (Options.Shared, Options.SharedTools): nothing was done, and the same
// lookup may succeed once the host is less busy.
var ErrBusy = errors.New("loophost: the host is busy admitting or compiling another module")

// lookupBound bounds a lookup of a module by id beyond its caller's
// context: a session create, whose context outlives its client, waits no
// longer than this for another admission.
var lookupBound = 30 * time.Second

// withLookupBound answers ctx bounded by lookupBound, whose end has the
// cause ErrBusy.
func withLookupBound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, lookupBound, fmt.Errorf("%w: no answer within %v", ErrBusy, lookupBound))
}

// lookupFailure answers the error of a lookup of module id of kind k,
// under ctx from withLookupBound, that failed with err (nil: nil). A
// failure that is a condition of the server and not of the name is a
// retryable overloaded session.TurnError, as an activation refused for
// the same cause is: the host is closed (wrapping ErrClosed), the lookup
// passed lookupBound (wrapping ErrBusy and context.DeadlineExceeded), or
// the module could not be stored or compiled (ErrStorage) or the
// cluster's store not read. Any other error, the end of the caller's own
// context among them, is answered as it is.
func lookupFailure(ctx context.Context, k kind, id string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return closedTurn(k, id, err)
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(ctx), ErrBusy):
		return &session.TurnError{Code: brainapi.CodeOverloaded, Retryable: true, Err: fmt.Errorf("%w: %w", context.Cause(ctx), err),
			Message: fmt.Sprintf("%s %s: the module could not be looked up: %v", k, short(id), context.Cause(ctx))}
	case errors.Is(err, journal.ErrOverloaded), errors.Is(err, ErrStorage):
		return storageTurn(k, id, err)
	}
	return err
}
