package commits

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestCounterCountsIntoItsSink(t *testing.T) {
	var sink atomic.Int64
	c := New(&sink)
	ctx := With(context.Background(), c)
	From(ctx).Add(2)
	From(ctx).Add(1)
	if got := c.Load(); got != 3 {
		t.Fatalf("counter = %d, want 3", got)
	}
	if got := sink.Load(); got != 3 {
		t.Fatalf("sink = %d, want 3", got)
	}
	later := c.Detached()
	later.Add(4)
	if c.Load() != 3 || later.Load() != 4 || sink.Load() != 7 {
		t.Fatalf("detached: counter %d, detached %d, sink %d; want 3, 4, 7", c.Load(), later.Load(), sink.Load())
	}
	var none *Counter
	none.Add(1) // a context without a counter counts nothing
	if From(context.Background()) != nil || none.Load() != 0 {
		t.Fatal("a context without a counter answered one")
	}
}
