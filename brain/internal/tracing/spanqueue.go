package tracing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// MaxQueuedSpans bounds the spans ended and not yet exported (waiting in
// the batch queue or in an export under way). A span ended while that
// many wait is dropped: counted (Settings.SpansDropped, reason
// DropQueueFull) and said in the log, the first of a streak. The memory
// held while the collector is slow or down is thus bounded, and ending a
// span never waits for the network.
const MaxQueuedSpans = 2048

// Reasons a span is dropped, as Settings.SpansDropped is told.
const (
	// DropQueueFull: the span ended while MaxQueuedSpans waited for
	// export.
	DropQueueFull = "queue_full"
	// DropExportFailed: its export failed (the collector is down, or
	// refused it).
	DropExportFailed = "export_failed"
)

// spanQueue is the span processor in front of the batcher: it counts the
// sampled spans ended and hands the batcher at most MaxQueuedSpans not yet
// exported, so that the batcher's queue, one larger, never drops one
// unseen (it would, silently, when full).
type spanQueue struct {
	next  sdktrace.SpanProcessor
	t     *spanTally
	drops *dropLog
}

func (q spanQueue) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { q.next.OnStart(ctx, s) }

func (q spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.t.ended.Add(1)
	if !q.t.reserve() {
		q.t.dropped.Add(1)
		q.t.report(DropQueueFull, 1)
		q.drops.dropped()
		return
	}
	q.next.OnEnd(s)
}

func (q spanQueue) Shutdown(ctx context.Context) error   { return q.next.Shutdown(ctx) }
func (q spanQueue) ForceFlush(ctx context.Context) error { return q.next.ForceFlush(ctx) }

// reserve takes a place in the queue for one span, when there is one.
func (t *spanTally) reserve() bool {
	for {
		n := t.queued.Load()
		if n >= MaxQueuedSpans {
			return false
		}
		if t.queued.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// report tells Settings.SpansDropped of n spans dropped for reason.
func (t *spanTally) report(reason string, n int) {
	if t.onDrop != nil && n > 0 {
		t.onDrop(reason, n)
	}
}

// dropLog says in the server's log that spans are being dropped because
// the queue is full: the first drop of a streak, which ends when an export
// is delivered again, and no more than once each exportLogEvery.
type dropLog struct {
	log *slog.Logger

	mu       sync.Mutex
	inStreak bool
	last     time.Time
}

// dropped records a span dropped for a full queue.
func (l *dropLog) dropped() {
	l.mu.Lock()
	now := time.Now()
	if l.inStreak || (!l.last.IsZero() && now.Sub(l.last) < exportLogEvery) {
		l.inStreak = true
		l.mu.Unlock()
		return
	}
	l.inStreak, l.last = true, now
	l.mu.Unlock()
	l.log.Warn("spans dropped: the trace export queue is full (the collector is slow or down)",
		"queue", MaxQueuedSpans)
}

// delivered ends a streak of drops: an export reached the collector.
func (l *dropLog) delivered() {
	l.mu.Lock()
	l.inStreak = false
	l.mu.Unlock()
}
