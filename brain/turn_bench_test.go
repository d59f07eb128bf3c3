package brain_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// BenchmarkTurnHTTP is one synchronous turn over HTTP on an in-process
// Brain (journal fsync on, scripted model, in-process echo environment):
// W1 a text turn, W2 a model step, 4 parallel tool calls, a model step
// and the answer. Each op is one turn of one session.
//
//	go test ./brain -run '^$' -bench TurnHTTP -count 6
func BenchmarkTurnHTTP(b *testing.B) {
	calls := make([]map[string]any, 4)
	for i := range calls {
		calls[i] = map[string]any{"name": "echo", "input": map[string]any{"n": i}}
	}
	w2, _ := json.Marshal(map[string]any{"tool_calls": calls, "reply": "done"})
	for _, w := range []struct{ name, msg string }{{"W1", "hello"}, {"W2", string(w2)}} {
		b.Run(w.name, func(b *testing.B) {
			_, sess := commitBrain(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := sess.Send(context.Background(), api.UserInput{Message: w.msg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
