package journal

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/uring"
)

// FlushMode selects how the writer waits for the commit log's fdatasync.
type FlushMode int

const (
	// FlushAuto flushes through io_uring while goroutines wait for a P
	// (the runtime's scheduling latency averaged at least
	// contendedLatency over the last sample) and with fdatasync(2) on a
	// goroutine otherwise, or always when io_uring is unavailable.
	FlushAuto FlushMode = iota
	// FlushPlain always calls fdatasync(2) on a goroutine.
	FlushPlain
	// FlushRing always flushes through io_uring where it is available.
	FlushRing
)

func (m FlushMode) String() string {
	switch m {
	case FlushAuto:
		return "auto"
	case FlushPlain:
		return "plain"
	case FlushRing:
		return "ring"
	}
	return fmt.Sprintf("FlushMode(%d)", int(m))
}

const (
	// contendedLatency: from this mean wait for a P on, a flush that
	// holds one costs the other goroutines more than io_uring's longer
	// completion path costs the commit. Measured on two cores: 2-6 µs
	// with one session taking turns, 42 µs with 16 goroutines appending
	// and doing nothing else, 150 µs with 128, 200-300 µs with 64
	// sessions taking turns.
	contendedLatency = 100 * time.Microsecond
	// schedSample is how often the writer samples the scheduling latency.
	schedSample = 50 * time.Millisecond
)

// startFlush starts the fdatasync of f and answers the wait for its
// result (now is the round's clock, for the scheduling sample): through
// the ring, where the waiting writer holds no P, or on a
// goroutine of its own (which holds one for as long as the call lasts).
// The wait may be called again: it answers the same result.
func (fs *FileStore) startFlush(f *os.File, now time.Time) func() error {
	if fs.opts.Flush != FlushPlain && (fs.opts.Flush == FlushRing || fs.sched.contended(now)) {
		if r := fs.flushRing(); r != nil {
			if fl, err := r.Fdatasync(f); err == nil {
				fs.ringFlushes.Add(1)
				return fl.Wait
			}
		}
	}
	synced := make(chan error, 1)
	go func() { synced <- fdatasync(f) }()
	return sync.OnceValue(func() error { return <-synced })
}

// flushRing answers the ring that flushes the commit log, set up at its
// first use; nil where io_uring is missing or refused, and flushes then
// go through fdatasync(2) on a goroutine. Owned by the writer.
func (fs *FileStore) flushRing() *uring.Ring {
	if !fs.ringTried {
		fs.ringTried = true
		fs.ring, _ = uring.New()
	}
	return fs.ring
}

// schedWatch follows the runtime's scheduling latency (the time runnable
// goroutines waited for a P). It is owned by the writer.
type schedWatch struct {
	sample []metrics.Sample
	counts []uint64 // the histogram's counts at the last sample
	next   time.Time
	busy   bool
}

// contended reports whether goroutines waited for a P at least
// contendedLatency on average between the last two samples; it samples
// at most every schedSample.
func (w *schedWatch) contended(now time.Time) bool {
	if now.Before(w.next) {
		return w.busy
	}
	w.next = now.Add(schedSample)
	if w.sample == nil {
		w.sample = []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	}
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return false
	}
	h := w.sample[0].Value.Float64Histogram()
	if len(w.counts) == len(h.Counts) {
		w.busy = meanSeconds(h, w.counts) >= contendedLatency.Seconds()
	}
	w.counts = append(w.counts[:0], h.Counts...)
	return w.busy
}

// meanSeconds answers the mean of the observations h gained since it
// held counts before, each taken at its bucket's middle (the finite
// bound of an open bucket).
func meanSeconds(h *metrics.Float64Histogram, before []uint64) float64 {
	var n, sum float64
	for i, c := range h.Counts {
		d := float64(c - before[i])
		if d == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		mid := (lo + hi) / 2
		switch {
		case math.IsInf(lo, -1):
			mid = hi
		case math.IsInf(hi, 1):
			mid = lo
		}
		n += d
		sum += d * max(mid, 0)
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
