//go:build linux && (amd64 || arm64)

package uring

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFlushBesideWork runs GOMAXPROCS×4 goroutines doing fixed chunks
// of CPU work (yielding between chunks) beside one goroutine that writes
// 100 bytes to a file and flushes it, back to back, for 500 ms per op:
// alone (no flusher), with fdatasync(2), and through a Ring. It reports the
// chunks done per second and the ratio to the same op's "alone" figure,
// and the flushes per second: what a P held in fdatasync costs the rest
// of the process.
//
//	go test ./brain/internal/uring -run '^$' -bench FlushBesideWork -benchtime 6x
func BenchmarkFlushBesideWork(b *testing.B) {
	r := newRing(b)
	f := tempFile(b)
	run := func(flush func() error) (work, flushes float64) {
		var stop atomic.Bool
		var chunks, n atomic.Int64
		var wg sync.WaitGroup
		for range 4 * runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for !stop.Load() {
					x := 0
					for i := range 20_000 {
						x += i * i
					}
					sink.Add(int64(x))
					chunks.Add(1)
					runtime.Gosched()
				}
			})
		}
		if flush != nil {
			wg.Go(func() {
				buf := make([]byte, 100)
				for !stop.Load() {
					if _, err := f.WriteAt(buf, 0); err != nil {
						b.Error(err)
						return
					}
					if err := flush(); err != nil {
						b.Error(err)
						return
					}
					n.Add(1)
				}
			})
		}
		const d = 500 * time.Millisecond
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		return float64(chunks.Load()) / d.Seconds(), float64(n.Load()) / d.Seconds()
	}
	plain := func() error { return syscall.Fdatasync(int(f.Fd())) }
	ring := func() error {
		fl, err := r.Fdatasync(f)
		if err != nil {
			return err
		}
		return fl.Wait()
	}
	var rp, rr, fp, fr []float64
	for b.Loop() {
		alone, _ := run(nil)
		wp, np := run(plain)
		wr, nr := run(ring)
		rp, rr = append(rp, wp/alone), append(rr, wr/alone)
		fp, fr = append(fp, np), append(fr, nr)
	}
	b.ReportMetric(median(rp), "work-beside-fdatasync/alone")
	b.ReportMetric(median(rr), "work-beside-ring/alone")
	b.ReportMetric(median(fp), "fdatasync-flushes/s")
	b.ReportMetric(median(fr), "ring-flushes/s")
}

var sink atomic.Int64

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
