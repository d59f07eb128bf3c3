package journal

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Every benchmark here writes to real files and always fsyncs.

var benchData = json.RawMessage(`{"text":"` + strings.Repeat("b", 80) + `"}`)

func reportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAppend measures one durable append of one record to one session.
func BenchmarkAppend(b *testing.B) {
	fs, err := OpenFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	lat := make([]time.Duration, 0, b.N)
	next := uint64(1)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := fs.Append(bg, "s", next, []Record{{Kind: "k", Data: benchData}}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		next++
	}
	reportLatencies(b, lat)
}

// BenchmarkRawWriteFdatasync is the baseline of BenchmarkAppend: write the
// same frame bytes to a file and fdatasync, nothing else.
func BenchmarkRawWriteFdatasync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	frame := appendFrame(nil, &Record{Sequence: 1, Kind: "k", Data: benchData})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := f.Write(frame); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatencies(b, lat)
}

var benchSessions = []int{1, 16, 128}

// BenchmarkThroughput: N sessions, one goroutine each, appending one record
// at a time; b.N records in total.
func BenchmarkThroughput(b *testing.B) {
	for _, n := range benchSessions {
		b.Run(fmt.Sprint("sessions=", n), func(b *testing.B) {
			fs, err := OpenFileStore(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer fs.Close()
			for i := range n { // create sessions outside the timed part
				if err := fs.Append(bg, fmt.Sprint("s", i), 1, []Record{{Kind: "k", Data: benchData}}); err != nil {
					b.Fatal(err)
				}
			}
			before := fs.Stats()
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := range n {
				wg.Go(func() {
					id := fmt.Sprint("s", i)
					next := uint64(2)
					for left.Add(-1) >= 0 {
						if err := fs.Append(bg, id, next, []Record{{Kind: "k", Data: benchData}}); err != nil {
							b.Error(err)
							return
						}
						next++
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			after := fs.Stats()
			recs := float64(after.Records - before.Records)
			b.ReportMetric(recs/el.Seconds(), "records/s")
			b.ReportMetric(recs/float64(after.Syncs-before.Syncs), "records/fsync")
			b.ReportMetric(recs/float64(after.Rounds-before.Rounds), "records/round")
			b.ReportMetric(float64(after.RingFlushes-before.RingFlushes)/float64(after.Rounds-before.Rounds), "ring-flushes/round")
		})
	}
}

// BenchmarkBareGroupCommit is the throughput baseline: N goroutines hand a
// frame to one syncer goroutine that appends everything pending to one file
// with one write, fdatasyncs once and acknowledges.
func BenchmarkBareGroupCommit(b *testing.B) {
	for _, n := range benchSessions {
		b.Run(fmt.Sprint("sessions=", n), func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			type req struct {
				frame []byte
				done  chan struct{}
			}
			var (
				mu      sync.Mutex
				cond    = sync.NewCond(&mu)
				pending []req
				stop    bool
				syncs   int64
				recs    int64
			)
			syncer := make(chan struct{})
			go func() {
				defer close(syncer)
				var buf []byte
				for {
					mu.Lock()
					for len(pending) == 0 && !stop {
						cond.Wait()
					}
					if len(pending) == 0 {
						mu.Unlock()
						return
					}
					batch := pending
					pending = nil
					mu.Unlock()
					buf = buf[:0]
					for _, r := range batch {
						buf = append(buf, r.frame...)
					}
					if _, err := f.Write(buf); err != nil {
						panic(err)
					}
					if err := fdatasync(f); err != nil {
						panic(err)
					}
					syncs++
					recs += int64(len(batch))
					for _, r := range batch {
						close(r.done)
					}
				}
			}()
			var left atomic.Int64
			left.Store(int64(b.N))
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := range n {
				wg.Go(func() {
					seq := uint64(1)
					for left.Add(-1) >= 0 {
						r := req{frame: appendFrame(nil, &Record{Sequence: seq, Kind: "k", Data: benchData}), done: make(chan struct{})}
						mu.Lock()
						pending = append(pending, r)
						cond.Signal()
						mu.Unlock()
						<-r.done
						seq++
						_ = i
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			mu.Lock()
			stop = true
			cond.Signal()
			mu.Unlock()
			<-syncer
			b.ReportMetric(float64(recs)/el.Seconds(), "records/s")
			b.ReportMetric(float64(recs)/float64(syncs), "records/fsync")
		})
	}
}

const reopenRecords = 20000

// reopenFixture writes a 20k-record session (and a checkpoint through its
// end) once per benchmark.
func reopenFixture(b *testing.B) string {
	dir := b.TempDir()
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < reopenRecords; i += 1000 {
		rs := make([]Record, 1000)
		for j := range rs {
			rs[j] = Record{Kind: "transcript_delta", Data: benchData}
		}
		if err := fs.Append(bg, "s", uint64(i+1), rs); err != nil {
			b.Fatal(err)
		}
	}
	if err := fs.WriteCheckpoint(bg, "s", reopenRecords, []byte(`{"status":"idle"}`)); err != nil {
		b.Fatal(err)
	}
	fs.Close()
	return dir
}

// BenchmarkReopen opens a store and a 20k-record session from disk, then
// either reads every record (no checkpoint) or reads the checkpoint and the
// records after it; raw reads the segment files sequentially, nothing else.
// "paired" runs raw, no-checkpoint and no-checkpoint-file back to back in
// each iteration and reports the medians of their per-iteration ratios, so
// that a machine whose speed drifts between sub-benchmarks does not sway
// the comparison.
func BenchmarkReopen(b *testing.B) {
	dir := reopenFixture(b)
	// The same journal with no checkpoint file at all: recovery at the
	// first Read checks every frame.
	bare := b.TempDir()
	if err := os.CopyFS(bare, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bare, "s", checkpointName)); err != nil {
		b.Fatal(err)
	}
	b.Run("raw-read", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			rawReadSession(b, dir)
		}
	})
	b.Run("raw-read-reused", func(b *testing.B) {
		// The same reads into one buffer allocated once: the copy from
		// the page cache alone, without a fresh buffer's page faults.
		var buf []byte
		defer reportCPU(b)()
		for b.Loop() {
			buf = rawReadInto(b, dir, buf)
		}
	})
	b.Run("no-checkpoint", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			reopenAll(b, dir)
		}
	})
	b.Run("no-checkpoint-file", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			reopenAll(b, bare)
		}
	})
	// The session of bare reopened in a store that stays open, as a
	// server reopens a session it dropped from memory: reading another
	// session ("t") evicts it (MaxLoadedSessions 1) before each reopen.
	open, reopenSession := openEvicting(b, bare)
	defer open.Close()
	b.Run("session", func(b *testing.B) {
		var cpu time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			evictS(b, open)
			b.StartTimer()
			c0 := processCPU(b)
			reopenSession()
			cpu += processCPU(b) - c0
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	})
	b.Run("checkpoint", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			fs, _ := OpenFileStore(dir, nil)
			through, _, err := fs.ReadCheckpoint(bg, "s")
			if err != nil || through != reopenRecords {
				b.Fatalf("ReadCheckpoint = %d, %v", through, err)
			}
			if page, err := fs.Read(bg, "s", through, 0, 0); err != nil || len(page) != 0 {
				b.Fatalf("Read after checkpoint = %d, %v", len(page), err)
			}
			fs.Close()
		}
	})
	b.Run("paired", func(b *testing.B) {
		var raw, nc, ncf, ses, rnc, rncf, rses []float64
		for b.Loop() {
			evictS(b, open)
			t0 := time.Now()
			rawReadSession(b, dir)
			t1 := time.Now()
			reopenAll(b, dir)
			t2 := time.Now()
			reopenAll(b, bare)
			t3 := time.Now()
			reopenSession()
			r := float64(t1.Sub(t0))
			raw, nc, ncf = append(raw, r), append(nc, float64(t2.Sub(t1))), append(ncf, float64(t3.Sub(t2)))
			ses = append(ses, float64(time.Since(t3)))
			rnc, rncf = append(rnc, nc[len(nc)-1]/r), append(rncf, ncf[len(ncf)-1]/r)
			rses = append(rses, ses[len(ses)-1]/r)
		}
		b.ReportMetric(median(raw)/1e3, "raw-µs")
		b.ReportMetric(median(nc)/1e3, "no-checkpoint-µs")
		b.ReportMetric(median(ncf)/1e3, "no-checkpoint-file-µs")
		b.ReportMetric(median(ses)/1e3, "session-µs")
		b.ReportMetric(median(rnc), "no-checkpoint/raw")
		b.ReportMetric(median(rncf), "no-checkpoint-file/raw")
		b.ReportMetric(median(rses), "session/raw")
	})
}

// rawReadInto reads the segment files of session "s" under dir into buf,
// grown as needed, and answers it.
func rawReadInto(b *testing.B, dir string, buf []byte) []byte {
	segs, _ := filepath.Glob(filepath.Join(dir, "s", "journal", "*.segment"))
	for _, p := range segs {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		if int64(cap(buf)) < fi.Size() {
			buf = make([]byte, fi.Size())
		}
		if _, err := io.ReadFull(f, buf[:fi.Size()]); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return buf
}

// openEvicting copies dir, adds a one-record session "t" to the copy and
// opens it in a store that keeps one session loaded. It answers the
// store and a function that reads all of session "s" page by page.
func openEvicting(b *testing.B, dir string) (*FileStore, func()) {
	cp := b.TempDir()
	if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	fs, err := OpenFileStore(cp, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := fs.Append(bg, "t", 1, []Record{{Kind: "k", Data: benchData}}); err != nil {
		b.Fatal(err)
	}
	fs.Close()
	if fs, err = OpenFileStore(cp, &Options{MaxLoadedSessions: 1}); err != nil {
		b.Fatal(err)
	}
	return fs, func() { readSessionS(b, fs) }
}

// evictS reads session "t" of a store from openEvicting, which drops
// session "s" from memory.
func evictS(b *testing.B, fs *FileStore) {
	before := fs.Stats().Recoveries
	if page, err := fs.Read(bg, "t", 0, 0, 0); err != nil || len(page) != 1 {
		b.Fatalf("Read t = %d, %v", len(page), err)
	}
	if _, err := fs.Read(bg, "s", reopenRecords-1, 0, 0); err != nil {
		b.Fatal(err)
	}
	if fs.Stats().Recoveries-before != 2 {
		b.Fatal("s was not dropped from memory")
	}
	if _, err := fs.Read(bg, "t", 0, 0, 0); err != nil {
		b.Fatal(err)
	}
}

// rawReadSession reads the segment files of session "s" under dir.
func rawReadSession(b *testing.B, dir string) {
	segs, _ := filepath.Glob(filepath.Join(dir, "s", "journal", "*.segment"))
	for _, p := range segs {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}

// reopenAll opens the store under dir and reads all of session "s" page
// by page.
func reopenAll(b *testing.B, dir string) {
	fs, _ := OpenFileStore(dir, nil)
	defer fs.Close()
	readSessionS(b, fs)
}

// readSessionS reads all of session "s" page by page.
func readSessionS(b *testing.B, fs *FileStore) {
	n := 0
	after := uint64(0)
	for {
		page, err := fs.Read(bg, "s", after, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		n += len(page)
		after = page[len(page)-1].Sequence
	}
	if n != reopenRecords {
		b.Fatalf("read %d records", n)
	}
}

// median answers the median of xs (which it sorts).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// reportCPU starts counting the process's CPU time (user and system, every
// thread: the garbage collector's and a reader goroutine's too); the
// function it answers reports it per operation as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
