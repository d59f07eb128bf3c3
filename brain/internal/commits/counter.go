package commits

import (
	"context"
	"sync/atomic"
)

// Counter counts the durable commits of one request. A nil *Counter
// counts nothing.
type Counter struct {
	n    atomic.Int64
	sink *atomic.Int64
}

// New returns a Counter that also adds every commit to sink (nil: none),
// so that a request kind's total includes commits made after its answer.
func New(sink *atomic.Int64) *Counter { return &Counter{sink: sink} }

// Add counts n commits.
func (c *Counter) Add(n int64) {
	if c == nil {
		return
	}
	c.n.Add(n)
	if c.sink != nil {
		c.sink.Add(n)
	}
}

// Load answers the commits counted so far.
func (c *Counter) Load() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

type ctxKey struct{}

// With answers ctx carrying c.
func With(ctx context.Context, c *Counter) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From answers the Counter ctx carries, or nil.
func From(ctx context.Context) *Counter {
	c, _ := ctx.Value(ctxKey{}).(*Counter)
	return c
}

// Detached answers a Counter for commits made after the request was
// answered (an async submission's turn): they reach c's sink but not c.
func (c *Counter) Detached() *Counter {
	if c == nil {
		return nil
	}
	return &Counter{sink: c.sink}
}
