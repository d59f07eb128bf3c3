package session

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/internal/fsutil"
)

const benchSessions = 64

// BenchmarkTurns64 runs unpaced text turns (scripted model, built-in loop,
// file journal with fsync) from 64 concurrent sessions. Baseline64 is the
// same harness doing only three raw write+fdatasync per turn.
//
// Each sub-benchmark also reports appends/turn: how many journal Append
// calls (each one durable flush) a turn costs, and checkpoints written per
// turn. "engine" is the default passivation (released after every turn,
// its projection kept within Config.ReleasedBytes); "engine-fold" keeps
// no projection, so every turn reloads checkpoint + journal tail.
func BenchmarkTurns64(b *testing.B) {
	b.Run("engine", func(b *testing.B) { benchTurns(b, Config{}, "hello", nil) })
	b.Run("engine-fold", func(b *testing.B) { benchTurns(b, Config{ReleasedBytes: -1}, "hello", nil) })
	b.Run("engine-keepidle", func(b *testing.B) { benchTurns(b, Config{IdleTTL: KeepIdle}, "hello", nil) })
	b.Run("baseline-3fdatasync", benchBaseline)
}

// BenchmarkToolTurns64 runs turns of two model calls around four parallel
// tool calls on an in-process echo environment (sessions kept in memory).
func BenchmarkToolTurns64(b *testing.B) {
	req := toolSession("echo")
	msg := script(map[string]any{"tool_calls": []map[string]any{
		{"name": "echo", "input": map[string]int{"n": 1}}, {"name": "echo", "input": map[string]int{"n": 2}},
		{"name": "echo", "input": map[string]int{"n": 3}}, {"name": "echo", "input": map[string]int{"n": 4}},
	}, "reply": "done"})
	b.Run("engine-keepidle", func(b *testing.B) { benchTurns(b, Config{IdleTTL: KeepIdle}, msg, &req) })
}

// countingStore counts Append and WriteCheckpoint calls.
type countingStore struct {
	journal.Store
	appends atomic.Int64
	ckw     atomic.Int64
}

func (c *countingStore) WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error {
	c.ckw.Add(1)
	return c.Store.WriteCheckpoint(ctx, session, through, payload)
}

func (c *countingStore) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	c.appends.Add(1)
	return c.Store.Append(ctx, session, expectedNext, records)
}

func benchTurns(b *testing.B, cfg Config, message string, req *api.CreateSessionRequest) {
	fs, err := journal.OpenFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	store := &countingStore{Store: fs}
	cfg.Store = store
	if req != nil {
		cfg.Environments = newFakeEnvs(map[string]string{"box": "echo"})
	}
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	ids := make([]string, benchSessions)
	for i := range ids {
		r := api.CreateSessionRequest{}
		if req != nil {
			r = *req
		}
		r.Model = api.ModelConfig{Provider: "scripted", Name: "m"}
		sum, err := e.Create(ctx, "", r)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = sum.SessionID
	}
	var next atomic.Int64
	b.ResetTimer()
	appends0 := store.appends.Load()
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := e.Send(ctx, id, api.UserInput{Message: message}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
	b.ReportMetric(float64(store.appends.Load()-appends0)/float64(b.N), "appends/turn")
	b.ReportMetric(float64(store.ckw.Load())/float64(b.N), "ckpts/turn")
	var recs uint64
	for _, id := range ids {
		n, _ := store.Next(ctx, id)
		recs += n - 1
	}
	b.ReportMetric(float64(recs)/float64(b.N), "records/turn")
}

func benchBaseline(b *testing.B) {
	dir := b.TempDir()
	files := make([]*os.File, benchSessions)
	for i := range files {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	frame := make([]byte, 256)
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				for k := 0; k < 3; k++ {
					if _, err := f.Write(frame); err != nil {
						b.Error(err)
						return
					}
					if err := fsutil.Fdatasync(f); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
}

// BenchmarkIdleSessionMemory creates passivated sessions in steps up to
// BRAIN_BENCH_RAMP (default 10,000) and reports the slope of private
// memory (Private_Clean + Private_Dirty + Private_Hugetlb of
// /proc/self/smaps_rollup) against live sessions, with r².
func BenchmarkIdleSessionMemory(b *testing.B) {
	total := 10000
	if v, err := strconv.Atoi(os.Getenv("BRAIN_BENCH_RAMP")); err == nil && v > 0 {
		total = v
	}
	if _, err := privateBytes(); err != nil {
		b.Skip("no /proc/self/smaps_rollup:", err)
	}
	for _, c := range []struct {
		name     string
		released int64
	}{{"released-default", 0}, {"released-none", -1}, {"released-unbounded", 1 << 40}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				slope, r2, heapSlope, kept := rampIdle(b, total, c.released)
				b.ReportMetric(slope, "private-B/session")
				b.ReportMetric(r2, "r2")
				b.ReportMetric(heapSlope, "heapinuse-B/session")
				b.ReportMetric(float64(kept), "released-kept")
			}
		})
	}
}

func rampIdle(b *testing.B, total int, releasedBytes int64) (slope, r2, heapSlope float64, kept int) {
	store, err := journal.OpenFileStore(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	e, err := New(Config{Store: store, ReleasedBytes: releasedBytes})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	steps := 10
	var xs, ys, hs []float64
	created := 0
	measure := func() {
		runtime.GC()
		debug.FreeOSMemory()
		p, err := privateBytes()
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		xs, ys, hs = append(xs, float64(created)), append(ys, float64(p)), append(hs, float64(ms.HeapInuse))
	}
	measure()
	for s := 1; s <= steps; s++ {
		target := total * s / steps
		var wg sync.WaitGroup
		var next atomic.Int64
		next.Store(int64(created))
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(target) {
					if _, err := e.Create(ctx, "", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		created = target
		if e.Active() != 0 {
			b.Fatalf("%d sessions active", e.Active())
		}
		measure()
	}
	slope, r2 = regress(xs, ys)
	heapSlope, _ = regress(xs, hs)
	e.mu.Lock()
	kept = e.released.len()
	e.mu.Unlock()
	return slope, r2, heapSlope, kept
}

func regress(xs, ys []float64) (slope, r2 float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy, syy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
		syy += ys[i] * ys[i]
	}
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	r := (n*sxy - sx*sy) / math.Sqrt((n*sxx-sx*sx)*(n*syy-sy*sy))
	return slope, r * r
}

func privateBytes() (int64, error) {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && (fields[0] == "Private_Clean:" || fields[0] == "Private_Dirty:" || fields[0] == "Private_Hugetlb:") {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("smaps_rollup: %w", err)
			}
			total += kb << 10
		}
	}
	return total, sc.Err()
}
