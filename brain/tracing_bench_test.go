package brain_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// BenchmarkTurnTracing is BenchmarkTurnHTTP's W2 (a model step, 4
// parallel tool calls on the in-process echo environment, a model step
// and the answer) with tracing off (no OTLP settings) and on (every span
// exported over OTLP/HTTP to an in-process receiver), in the same run.
//
//	go test ./brain -run '^$' -bench TurnTracing -count 6
func BenchmarkTurnTracing(b *testing.B) {
	calls := make([]map[string]any, 4)
	for i := range calls {
		calls[i] = map[string]any{"name": "echo", "input": map[string]any{"n": i}}
	}
	w2, _ := json.Marshal(map[string]any{"tool_calls": calls, "reply": "done"})
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			opts := braintest.Options{Environments: map[string]braintest.Environment{"box": {Handler: echoEnv()}}}
			var rcv *otlptest.Receiver
			if on {
				rcv = otlptest.Start()
				defer rcv.Close()
				opts.Edit = func(cfg *brain.Config) { cfg.OTLP.Endpoint = rcv.URL() }
			}
			bt := braintest.Start(b, opts)
			sess := newSession(b, bt)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := sess.Send(context.Background(), api.UserInput{Message: string(w2)}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			bt.Stop()
			if on && len(rcv.Spans()) < b.N*8 {
				b.Fatalf("%d spans received for %d turns, want at least 8 a turn", len(rcv.Spans()), b.N)
			}
		})
	}
}
