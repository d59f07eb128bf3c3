package loophost_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
// close of the same compiled module, and an activation with a long
// transcript beside the bare instantiation. It fails if anything is
// compiled while it runs.
func BenchmarkActivation(b *testing.B) {
	h := openHost(b, loophost.Options{})
	id := admit(b, h, builtin.DefaultWasm())
	ctx := context.Background()
	b.Run("activation", func(b *testing.B) {
		f, err := h.Func(context.Background(), id)
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
	// The same comparison with the three, and the bare instantiation of
	// the module as given (its data segments not merged), alternating in
	// one loop, so that a change of machine load during the run affects
	// all of them alike: it reports each one's mean time and the ratios.
	b.Run("interleaved", func(b *testing.B) {
		f, err := h.Func(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		in := input("hello")
		given, err := h.BareAsGiven(ctx, builtin.DefaultWasm())
		if err != nil {
			b.Fatal(err)
		}
		compiles := h.Compiles()
		var act, bare, mapped, asGiven time.Duration
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
			t3 := time.Now()
			if err := given(ctx); err != nil {
				b.Fatal(err)
			}
			act, bare, mapped, asGiven = act+t1.Sub(t0), bare+t2.Sub(t1), mapped+t3.Sub(t2), asGiven+time.Since(t3)
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
		b.ReportMetric(ms(asGiven), "as-given-ms")
		b.ReportMetric(float64(act)/float64(asGiven), "ratio-vs-as-given")
	})
	// An activation whose transcript holds 40 messages of 2 KiB of text
	// beside a bare instantiation with mapped memory, alternating: the
	// difference is what the loop pays per byte of transcript (the input
	// decoded, the model request and set_transcript encoded, each decoded
	// again by the host).
	b.Run("long-transcript", func(b *testing.B) {
		f, err := h.Func(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		in := input("hello")
		text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 46)
		for range 20 {
			in.Transcript = append(in.Transcript,
				api.Message{Role: api.RoleUser, Content: []api.ContentBlock{api.TextBlock(text)}},
				api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock(text)}})
		}
		var act, bare time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := f(ctx, newFake(), in); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := h.BareInstantiate(ctx, id, true); err != nil {
				b.Fatal(err)
			}
			act, bare = act+t1.Sub(t0), bare+time.Since(t1)
		}
		ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
		b.ReportMetric(ms(act), "activation-ms")
		b.ReportMetric(ms(bare), "bare-mapped-ms")
		b.ReportMetric(ms(act-bare), "transcript-ms")
	})
}

const benchSessions = 64

// BenchmarkTurns64 (PERFORMANCE.md row 5b) runs unpaced text turns from 64
// concurrent sessions (scripted model, file journal with fsync, sessions
// kept in memory) with the default loop as a Wasm module, beside the CPU
// bound of bare instantiation: 64 goroutines instantiating and closing
// the same compiled module, each alone and all three interleaved. The
// native default loop in the same harness is given for context.
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
	// The same three, and the bare instantiation of the module as given
	// (its data segments not merged, as wazero alone would run it), in
	// alternating slices of 64 operations, so that a change of machine
	// load during the run affects them alike (the sessions are the same 64
	// as above, 16 turns each in 1,024): it reports each one's rate and
	// the Wasm loop's turns/s as a ratio to each bare rate (row 5b's
	// target is at least 0.8).
	b.Run("interleaved", func(b *testing.B) {
		h := openHost(b, loophost.Options{MaxInstances: benchSessions})
		id := admit(b, h, builtin.DefaultWasm())
		impl, _ := json.Marshal(map[string]string{"type": "brain_component", "entrypoint": "turn", "id": id})
		ctx := context.Background()
		given, err := h.BareAsGiven(ctx, builtin.DefaultWasm())
		if err != nil {
			b.Fatal(err)
		}
		ops := []func() error{
			turner(b, h, impl),
			func() error { return h.BareInstantiate(ctx, id, false) },
			func() error { return h.BareInstantiate(ctx, id, true) },
			func() error { return given(ctx) },
		}
		compiles := h.Compiles()
		var spent, cpu [4]time.Duration
		var done [4]int
		b.ResetTimer()
		for r, left := 0, b.N; left > 0; r, left = r+1, left-benchSessions {
			n := min(left, benchSessions)
			// Each slice starts with the next one in turn, so that
			// the garbage one leaves is collected during each of the
			// others alike.
			for k := range ops {
				i := (r + k) % len(ops)
				c0 := cpuTime()
				spent[i] += spread(b, n, ops[i])
				cpu[i] += cpuTime() - c0
				done[i] += n
			}
		}
		b.StopTimer()
		if h.Compiles() != compiles {
			b.Fatalf("%d compiles on the turn path", h.Compiles()-compiles)
		}
		var rate [4]float64
		for i := range rate {
			rate[i] = float64(done[i]) / spent[i].Seconds()
		}
		b.ReportMetric(rate[0], "turns/s")
		b.ReportMetric(rate[1], "bare/s")
		b.ReportMetric(rate[2], "bare-mapped/s")
		b.ReportMetric(rate[3], "as-given/s")
		b.ReportMetric(rate[0]/rate[1], "ratio-vs-bare")
		b.ReportMetric(rate[0]/rate[2], "ratio-vs-mapped")
		b.ReportMetric(rate[0]/rate[3], "ratio-vs-as-given")
		for i, name := range []string{"turn", "bare", "bare-mapped", "as-given"} {
			b.ReportMetric(float64(cpu[i])/float64(done[i])/1e6, "cpu-ms/"+name)
		}
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
	turn := turner(b, h, impl)
	b.ResetTimer()
	b.ReportMetric(float64(b.N)/spread(b, b.N, turn).Seconds(), "turns/s")
}

// turner opens a session engine on a file journal with fsync and 64
// sessions running impl, and returns an op that takes one text turn in
// whichever session is free.
func turner(b *testing.B, h *loophost.Host, impl json.RawMessage) func() error {
	store, err := journal.OpenFileStore(filepath.Join(b.TempDir(), "sessions"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	e, err := session.New(session.Config{Store: store, Loops: h.Resolve, IdleTTL: session.KeepIdle})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
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
	return func() error {
		id := <-ids
		defer func() { ids <- id }()
		_, err := e.Send(ctx, id, api.UserInput{Message: "hello"})
		return err
	}
}

// parallel runs op b.N times from 64 goroutines and reports the rate.
func parallel(b *testing.B, op func() error, unit string) {
	b.ResetTimer()
	b.ReportMetric(float64(b.N)/spread(b, b.N, op).Seconds(), unit)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spread runs op n times from 64 goroutines and returns the wall time.
func spread(b *testing.B, n int, op func() error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}
