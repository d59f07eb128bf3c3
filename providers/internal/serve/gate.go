package serve

import (
	"context"
	"sync"
)

// Gate admits a provider's operations until its Close begins. The
// context of an operation admitted as stoppable ends once Close has
// begun, so that a running command is stopped; Close waits for every
// admitted operation to return before it releases what the provider
// holds. The zero Gate is not usable: make one with NewGate.
type Gate struct {
	stopping context.Context
	stop     context.CancelCauseFunc
	closed   chan struct{} // closed once the first Close has returned

	mu      sync.Mutex
	closing bool
	ops     sync.WaitGroup // Add only under mu while !closing
}

// NewGate answers a gate that admits operations.
func NewGate() *Gate {
	g := &Gate{closed: make(chan struct{})}
	g.stopping, g.stop = context.WithCancelCause(context.Background())
	return g
}

// Hold admits one operation, or answers false once Close has begun; the
// caller calls leave when the operation has returned.
func (g *Gate) Hold() (leave func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return nil, false
	}
	g.ops.Add(1)
	return g.ops.Done, true
}

// Enter is Hold for an operation that runs with ctx: the context it
// answers ends with ctx and, once Close has begun, with Close's cause.
func (g *Gate) Enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	done, ok := g.Hold()
	if !ok {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(g.stopping, func() { cancel(context.Cause(g.stopping)) })
	return ctx, func() {
		unhook()
		cancel(nil)
		done()
	}, true
}

// Close refuses every operation from now on, ends the contexts of those
// entered with cause, waits for every admitted operation to return, and
// then calls release and answers its error. A second Close waits for the
// first to return and answers nil.
func (g *Gate) Close(cause error, release func() error) error {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		<-g.closed
		return nil
	}
	g.closing = true
	g.mu.Unlock()
	g.stop(cause)
	g.ops.Wait()
	defer close(g.closed)
	return release()
}
