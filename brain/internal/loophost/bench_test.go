package loophost_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop/builtin"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
)

// BenchmarkActivation (PERFORMANCE.md row 9) runs one activation of the
// Wasm default loop (fresh instance, TurnInput in, a model call and
// set_transcript through the host functions, TurnOutput out, close)
// against an in-memory service table, beside the bare instantiation and
// close of the same compiled module. It fails if anything is compiled
// while it runs.
func BenchmarkActivation(b *testing.B) {
	h := openHost(b, loophost.Options{})
	id := admit(b, h, builtin.DefaultWasm())
	ctx := context.Background()
	b.Run("activation", func(b *testing.B) {
		f, err := h.Func(id)
		if err != nil {
			b.Fatal(err)
		}
		in := input("hello")
		compiles := h.Compiles()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := f(ctx, newFake(), in); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if h.Compiles() != compiles {
			b.Fatalf("%d compiles on the turn path", h.Compiles()-compiles)
		}
	})
	for _, mapped := range []bool{false, true} {
		name := "bare-instantiate"
		if mapped {
			name += "-mapped"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := h.BareInstantiate(ctx, id, mapped); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The same comparison with the three alternating in one loop, so that
	// a change of machine load during the run affects all of them alike:
	// it reports each one's mean time and the ratios.
	b.Run("interleaved", func(b *testing.B) {
		f, err := h.Func(id)
		if err != nil {
			b.Fatal(err)
		}
		in := input("hello")
		compiles := h.Compiles()
		var act, bare, mapped time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := f(ctx, newFake(), in); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := h.BareInstantiate(ctx, id, false); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := h.BareInstantiate(ctx, id, true); err != nil {
				b.Fatal(err)
			}
			act, bare, mapped = act+t1.Sub(t0), bare+t2.Sub(t1), mapped+time.Since(t2)
		}
		if h.Compiles() != compiles {
			b.Fatalf("%d compiles on the turn path", h.Compiles()-compiles)
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
		b.ReportMetric(ms(act), "activation-ms")
		b.ReportMetric(ms(bare), "bare-ms")
		b.ReportMetric(ms(mapped), "bare-mapped-ms")
		b.ReportMetric(float64(act)/float64(bare), "ratio-vs-bare")
		b.ReportMetric(float64(act)/float64(mapped), "ratio-vs-mapped")
	})
}

const benchSessions = 64

// BenchmarkTurns64 (PERFORMANCE.md row 5b) runs unpaced text turns from 64
// concurrent sessions (scripted model, file journal with fsync, sessions
// kept in memory) with the default loop as a Wasm module, beside the CPU
// bound of bare instantiation: 64 goroutines instantiating and closing
// the same compiled module. The native default loop in the same harness
// is given for context.
func BenchmarkTurns64(b *testing.B) {
	b.Run("wasm-default-loop", func(b *testing.B) {
		h := openHost(b, loophost.Options{MaxInstances: benchSessions})
		id := admit(b, h, builtin.DefaultWasm())
		impl, _ := json.Marshal(map[string]string{"type": "brain_component", "entrypoint": "turn", "id": id})
		compiles := h.Compiles()
		benchTurns(b, h, impl)
		if h.Compiles() != compiles {
			b.Fatalf("%d compiles on the turn path", h.Compiles()-compiles)
		}
	})
	b.Run("native-default-loop", func(b *testing.B) {
		h := openHost(b, loophost.Options{MaxInstances: benchSessions})
		benchTurns(b, h, json.RawMessage(`{"type":"brain_builtin","name":"default"}`))
	})
	for _, mapped := range []bool{false, true} {
		name := "bare-instantiate-64"
		if mapped {
			name += "-mapped"
		}
		b.Run(name, func(b *testing.B) {
			h := openHost(b, loophost.Options{})
			id := admit(b, h, builtin.DefaultWasm())
			ctx := context.Background()
			parallel(b, func() error { return h.BareInstantiate(ctx, id, mapped) }, "instances/s")
		})
	}
}

func benchTurns(b *testing.B, h *loophost.Host, impl json.RawMessage) {
	store, err := journal.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	e, err := session.New(session.Config{Store: store, Loops: h.Resolve, IdleTTL: session.KeepIdle})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	ids := make(chan string, benchSessions)
	for range benchSessions {
		sum, err := e.Create(ctx, "", api.CreateSessionRequest{
			Model:     api.ModelConfig{Provider: "scripted", Name: "m"},
			Agentloop: &api.Agentloop{Implementation: impl},
		})
		if err != nil {
			b.Fatal(err)
		}
		ids <- sum.SessionID
	}
	parallel(b, func() error {
		id := <-ids
		defer func() { ids <- id }()
		_, err := e.Send(ctx, id, api.UserInput{Message: "hello"})
		return err
	}, "turns/s")
}

// parallel runs op b.N times from 64 goroutines and reports the rate.
func parallel(b *testing.B, op func() error, unit string) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), unit)
}
