package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// asyncSink takes entries and reports them only when told to; it refuses
// those whose record is "refuse".
type asyncSink struct {
	mu     sync.Mutex
	report func(delivered, failed int)
	taken  int
}

func (a *asyncSink) ReportTo(report func(delivered, failed int)) { a.report = report }

func (a *asyncSink) Write(_ context.Context, e Entry) error {
	if string(e.Record) == `"refuse"` {
		return errors.New("refused")
	}
	a.mu.Lock()
	a.taken++
	a.mu.Unlock()
	return nil
}

func (a *asyncSink) Close(context.Context) error { return nil }

// TestAsyncSinkCountsWhatItDelivered: an entry an asynchronous sink took
// is pending, neither written nor dropped, until the sink reports it:
// delivered ones are written, failed ones dropped as write_error; one it
// refused at once is dropped then.
func TestAsyncSinkCountsWhatItDelivered(t *testing.T) {
	sink := &asyncSink{}
	p := New(Options{Sink: sink, SessionRate: 1e6, GlobalRate: 1e6})
	for _, r := range []string{`1`, `2`, `"refuse"`, `3`} {
		if err := p.Accept(toolOrigin("a"), []byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return p.Stats().Dropped[DropWriteError] == 1 && p.Stats().Pending == 3 })
	if s := p.Stats(); s.Written != 0 {
		t.Fatalf("before any report: %+v, want nothing written", s)
	}
	sink.report(2, 1)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Written != 2 || s.Dropped[DropWriteError] != 2 || s.Pending != 0 {
		t.Errorf("after the report: %+v, want 2 written, 2 write_error, none pending", s)
	}
}
