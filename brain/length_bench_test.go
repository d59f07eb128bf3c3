package brain_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// BenchmarkSessionLength (PERFORMANCE.md row 19) compares turns 1,001–1,020
// of one session with turns 1–20 of a fresh one, over HTTP (journal fsync
// on, scripted model, in-process echo environment): a turn's cost must not
// grow with the turns before it. The long session is first filled with
// 1,000 turns; then its turns alternate with those of the fresh session
// (on the same server), so that both medians see the same machine load.
// W1 is a text turn; W2 a model step, 4 parallel tool calls, a model step
// and the answer.
//
//	go test ./brain -run '^$' -bench SessionLength -benchtime 1x
func BenchmarkSessionLength(b *testing.B) {
	calls := make([]map[string]any, 4)
	for i := range calls {
		calls[i] = map[string]any{"name": "echo", "input": map[string]any{"n": i}}
	}
	w2, _ := json.Marshal(map[string]any{"tool_calls": calls, "reply": "done"})
	for _, w := range []struct{ name, msg string }{{"W1", "hello"}, {"W2", string(w2)}} {
		b.Run(w.name, func(b *testing.B) {
			var early, late []time.Duration
			for i := 0; i < b.N; i++ {
				brn, long := commitBrain(b)
				send := func(s *client.Session) time.Duration {
					start := time.Now()
					if _, err := s.Send(context.Background(), api.UserInput{Message: w.msg}); err != nil {
						b.Fatal(err)
					}
					return time.Since(start)
				}
				for turn := 1; turn <= 1000; turn++ {
					send(long)
				}
				fresh := newSession(b, brn)
				for turn := 1; turn <= 20; turn++ {
					early = append(early, send(fresh))
					late = append(late, send(long))
				}
			}
			e, l := median(early), median(late)
			b.ReportMetric(float64(e.Microseconds())/1000, "turn1-20-ms/p50")
			b.ReportMetric(float64(l.Microseconds())/1000, "turn1001-1020-ms/p50")
			b.ReportMetric(float64(l)/float64(e), "ratio")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
