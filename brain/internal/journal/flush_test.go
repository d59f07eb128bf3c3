package journal

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/uring"
)

// ringAvailable reports whether this kernel lets the process set up an
// io_uring.
func ringAvailable() bool {
	r, err := uring.New()
	if err != nil {
		return false
	}
	r.Close()
	return true
}

// TestFlushModes appends from several sessions at once in every flush
// mode and reads everything back after a reopen; FlushRing must flush
// through io_uring where the kernel has it, FlushPlain never.
func TestFlushModes(t *testing.T) {
	for _, mode := range []FlushMode{FlushAuto, FlushPlain, FlushRing} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			fs := openT(t, dir, &Options{Flush: mode})
			const sessions, appends = 8, 40
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() {
					id := fmt.Sprint("s", i)
					for n := 1; n <= appends; n++ {
						if err := fs.Append(bg, id, uint64(n), numbered(n, 1)); err != nil {
							t.Errorf("Append(%s, %d) = %v", id, n, err)
							return
						}
					}
				})
			}
			wg.Wait()
			st := fs.Stats()
			switch {
			case mode == FlushPlain && st.RingFlushes != 0:
				t.Errorf("FlushPlain: %d flushes through io_uring", st.RingFlushes)
			case mode == FlushRing && ringAvailable() && st.RingFlushes != st.Rounds:
				// Every group commit flushes the log once.
				t.Errorf("FlushRing: %d flushes through io_uring in %d group commits", st.RingFlushes, st.Rounds)
			}
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			fs = openT(t, dir, nil)
			for i := range sessions {
				id := fmt.Sprint("s", i)
				rs, err := fs.Read(bg, id, 0, 0, 0)
				if err != nil || len(rs) != appends {
					t.Fatalf("Read(%s) after reopen = %d records, %v", id, len(rs), err)
				}
				for k, r := range rs {
					if r.Sequence != uint64(k+1) || string(r.Data) != string(numbered(k+1, 1)[0].Data) {
						t.Fatalf("%s record %d = %d %s", id, k, r.Sequence, r.Data)
					}
				}
			}
		})
	}
}

// TestMeanSeconds checks the mean taken from a histogram's new counts.
func TestMeanSeconds(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 10e-6, 100e-6, math.Inf(1)},
		Counts:  []uint64{0, 10, 4, 7},
	}
	before := []uint64{0, 5, 2, 5}
	// New: 5 at 5 µs, 2 at 55 µs, 2 at 100 µs (the open bucket's bound).
	want := (5*5e-6 + 2*55e-6 + 2*100e-6) / 9
	if got := meanSeconds(h, before); math.Abs(got-want) > 1e-12 {
		t.Errorf("meanSeconds = %g, want %g", got, want)
	}
	if got := meanSeconds(h, h.Counts); got != 0 {
		t.Errorf("meanSeconds with nothing new = %g, want 0", got)
	}
}

// TestSchedWatchSeesContention: with many more runnable goroutines than
// Ps, the mean wait for a P is far above contendedLatency, and the watch
// says so (it needs two samples, schedSample apart).
func TestSchedWatchSeesContention(t *testing.T) {
	var w schedWatch
	now := time.Now()
	w.contended(now)
	stop := keepPsBusy()
	time.Sleep(200 * time.Millisecond)
	busy := w.contended(now.Add(schedSample))
	stop()
	if !busy {
		t.Error("the watch did not see goroutines waiting for a P")
	}
	// Within one sample period the answer stands.
	if w.contended(now.Add(schedSample+time.Millisecond)) != busy {
		t.Error("the watch sampled again within schedSample")
	}
}

// TestAutoFlushUsesTheRingUnderContention: with far more runnable
// goroutines than Ps, FlushAuto flushes the commit log through io_uring
// (where the kernel has it), and every acknowledged record reads back.
func TestAutoFlushUsesTheRingUnderContention(t *testing.T) {
	if !ringAvailable() {
		t.Skip("io_uring unavailable: FlushAuto always calls fdatasync here")
	}
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	defer keepPsBusy()()
	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			id := fmt.Sprint("s", i)
			for n := uint64(1); fs.Stats().RingFlushes < 5 && time.Now().Before(deadline); n++ {
				if err := fs.Append(bg, id, n, numbered(int(n), 1)); err != nil {
					t.Errorf("Append(%s, %d) = %v", id, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := fs.Stats().RingFlushes; n < 5 {
		t.Fatalf("%d flushes through io_uring in 10 s of contention, want at least 5", n)
	}
	for i := range 4 {
		id := fmt.Sprint("s", i)
		next, err := fs.Next(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := fs.Read(bg, id, 0, 0, 0)
		if err != nil || uint64(len(rs)) != next-1 {
			t.Fatalf("Read(%s) = %d records, %v; Next is %d", id, len(rs), err, next)
		}
	}
}

// keepPsBusy starts 16 goroutines per P that compute in slices of about
// 100 µs and yield in between, so that runnable goroutines always wait
// for a P; the function it answers stops them.
func keepPsBusy() (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 16 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 0
			for !done.Load() {
				for i := range 200_000 {
					x += i
				}
				runtime.Gosched()
			}
			_ = x
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

// TestFlushWaitAgain: the wait startFlush answers may be called again,
// and by several goroutines, in every flush mode: each call answers the
// flush's result instead of blocking.
func TestFlushWaitAgain(t *testing.T) {
	for _, mode := range []FlushMode{FlushPlain, FlushRing} {
		t.Run(mode.String(), func(t *testing.T) {
			fs := openT(t, t.TempDir(), &Options{Flush: mode})
			f, err := os.Create(filepath.Join(t.TempDir(), "f"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			wait := fs.startFlush(f, time.Now())
			errc := make(chan error, 3)
			for range cap(errc) {
				go func() { errc <- wait() }()
			}
			for range cap(errc) {
				select {
				case err := <-errc:
					if err != nil {
						t.Fatalf("wait = %v", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a second wait for the same flush did not answer")
				}
			}
		})
	}
}
