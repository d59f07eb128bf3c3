package pythonuv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// errStopping is the cause the contexts of the executes and preparations
// in flight end with once Close has begun.
var errStopping = errors.New("the provider is stopping")

// stoppingFailure answers what arrives once Close has begun.
func stoppingFailure() *envsdk.Error {
	return envsdk.Fail(envapi.CodeUnavailable, "the provider is stopping: it serves no more operations")
}

// admit admits an operation that Close lets end (setup, detach, teardown)
// unless Close has begun; the caller calls leave once it returns.
func (p *Provider) admit() (leave func(), err error) {
	leave, ok := p.gate.Hold()
	if !ok {
		return nil, stoppingFailure()
	}
	return leave, nil
}

// enter admits work that runs with ctx (an execute, a Prepare, a
// preparation) unless Close has begun. The context it answers ends with
// ctx and once Close begins, with errStopping; the caller calls leave
// once the work returned.
func (p *Provider) enter(ctx context.Context) (_ context.Context, leave func(), err error) {
	ctx, leave, ok := p.gate.Enter(ctx)
	if !ok {
		return nil, nil, stoppingFailure()
	}
	return ctx, leave, nil
}

// closeWait bounds how long Close waits for stopped operations and
// preparations to clean up.
const closeWait = 10 * time.Second

// Close stops the provider. Once Close has begun every operation that
// arrives (setup, execute, detach, teardown, and Prepare) fails with
// unavailable and leaves the state directory as it is. Running
// preparations are stopped (they fail) and running invocations too (they
// answer cancelled; their process trees are killed); a setup, detach or
// teardown in flight is let finish. Close waits for all of them to end,
// so that no Python process outlives the provider and no binding record
// changes once it returned, but no longer than closeWait: past it, Close
// answers an error while they go on ending. Close is repeatable.
func (p *Provider) Close() error {
	closed := make(chan error, 1)
	go func() { closed <- p.gate.Close(errStopping, func() error { return nil }) }()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case err := <-closed:
		return err
	case <-t.C:
		return fmt.Errorf("pythonuv: operations still cleaning up after %s", closeWait)
	}
}
