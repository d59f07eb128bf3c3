package workspace

import (
	"context"
	"errors"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// errStopping is the cause the contexts of the operations in flight end
// with once Close has begun.
var errStopping = errors.New("workspace: the provider is stopping")

// stoppingFailure answers an operation that arrives once Close has begun.
func stoppingFailure() error {
	return envsdk.Fail(envapi.CodeUnavailable, "the provider is stopping: it serves no more operations")
}

// hold admits work on the root (an operation, or an allocation that
// outlives the execute that started it) unless Close has begun; the
// caller calls leave once the work is done.
func (p *Provider) hold() (leave func(), err error) {
	leave, ok := p.gate.Hold()
	if !ok {
		return nil, stoppingFailure()
	}
	return leave, nil
}

// enter admits the operation c unless Close has begun. Its context ends
// with c's and once Close begins; the caller calls leave when the
// operation returns.
func (p *Provider) enter(c *envsdk.Ctx) (ctx context.Context, leave func(), err error) {
	ctx, leave, ok := p.gate.Enter(c.Context())
	if !ok {
		return nil, nil, stoppingFailure()
	}
	return ctx, leave, nil
}

// Close stops the provider and releases the root, so that another
// provider may start on it; the end of the process releases the root
// too. Once Close has begun every operation that arrives fails with
// unavailable; the commands running are stopped (their executes answer
// cancelled), and Close waits for the operations in flight to end before
// it releases the root, so that none of them writes there once another
// provider may own it. Close is repeatable.
func (p *Provider) Close() error {
	return p.gate.Close(errStopping, func() error {
		p.mu.Lock()
		lock := p.lock
		p.lock = nil
		p.mu.Unlock()
		if lock == nil {
			return nil
		}
		return lock.Close() // closing the descriptor releases the flock
	})
}
