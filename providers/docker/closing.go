package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// errStopping is the cause the contexts of the executes in flight end with
// once Close has begun.
var errStopping = errors.New("docker: the provider is stopping")

// stoppingFailure answers an operation that arrives once Close has begun.
func stoppingFailure() error {
	return envsdk.Fail(envapi.CodeUnavailable, "the provider is stopping: it serves no more operations")
}

// enter admits an operation unless Close has begun; the caller calls
// leave once it returns. Its context ends with c's and, for an execute
// (stoppable), once Close begins; setup, detach, teardown and cancel are
// bounded and left to end, so that Close never cuts one short.
func (p *Provider) enter(c *envsdk.Ctx, stoppable bool) (ctx context.Context, leave func(), err error) {
	if !stoppable {
		leave, ok := p.gate.Hold()
		if !ok {
			return nil, nil, stoppingFailure()
		}
		return c.Context(), leave, nil
	}
	ctx, leave, ok := p.gate.Enter(c.Context())
	if !ok {
		return nil, nil, stoppingFailure()
	}
	return ctx, leave, nil
}

// Close stops the provider. Once Close has begun every operation that
// arrives fails with unavailable; the commands running are stopped as a
// cancel stops them (their executes answer cancelled, every process of
// them killed), and Close waits for the operations in flight and for the
// allocations they started to end, so that none is cut short by the end
// of the process. The bindings' containers are left running, for the next
// provider on the state directory. Close closes the Engine client when
// the provider made it (Config.Client was nil). It is repeatable.
func (p *Provider) Close() error {
	return p.gate.Close(errStopping, func() error {
		// No allocation starts any more: each started was registered by
		// an execute that has returned.
		p.mu.Lock()
		bindings := make([]*binding, 0, len(p.bindings))
		for _, b := range p.bindings {
			bindings = append(bindings, b)
		}
		p.mu.Unlock()
		for _, b := range bindings {
			_ = b.waitAllocation(context.Background())
		}
		if p.ownClient {
			if err := p.cli.Close(); err != nil {
				return fmt.Errorf("docker: close the Engine client: %w", err)
			}
		}
		return nil
	})
}
