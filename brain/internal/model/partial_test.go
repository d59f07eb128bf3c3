package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestPartialUsageOnFailure checks that a call failing after the provider
// began to answer reports what it had counted: Anthropic's message_start
// input usage when the stream breaks off or the caller cancels, and the
// complete usage of an answer that cannot be used.
func TestPartialUsageOnFailure(t *testing.T) {
	msgs := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}
	partialOf := func(t *testing.T, err error) Partial {
		t.Helper()
		var pe *PartialError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a *PartialError", err)
		}
		return pe.Partial
	}
	t.Run("anthropic/truncated", func(t *testing.T) {
		f, c := open(t, anthropicDialect, Limits{})
		f.set(sse(anthropicDialect.truncated()))
		_, err := c.Call(context.Background(), msgs, nil)
		var prov *ProviderError
		if !errors.As(err, &prov) || prov.Code != CodeStreamTruncated {
			t.Fatalf("err = %v", err)
		}
		p := partialOf(t, err)
		if p.UsageComplete || p.Usage.InputTokens == nil || *p.Usage.InputTokens != 10 || p.Usage.TotalInputTokens == nil || *p.Usage.TotalInputTokens != 10 {
			t.Fatalf("partial = %+v, want 10 input tokens, incomplete", p)
		}
	})
	t.Run("anthropic/cancelled", func(t *testing.T) {
		f, c := open(t, anthropicDialect, Limits{})
		release := make(chan struct{})
		defer close(release)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f.set(func(w http.ResponseWriter, _ *recorded) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, anthropicStart(7, 3)+
				event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})+
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Hel"}}))
			w.(http.Flusher).Flush()
			<-release
		})
		// The first delta comes after message_start: cancel there.
		_, err := c.Call(ctx, msgs, func(Delta) { cancel() })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		p := partialOf(t, err)
		if p.UsageComplete || p.Usage.TotalInputTokens == nil || *p.Usage.TotalInputTokens != 10 || *p.Usage.CacheReadInputTokens != 3 {
			t.Fatalf("partial = %+v, want 10 input tokens (3 cached), incomplete", p)
		}
	})
	for _, d := range dialects {
		t.Run(d.provider+"/invalid-tool-input", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.set(sse(d.render(turn{calls: []fakeCall{{id: "call_1", name: "get_weather", args: []string{`{"city":`}}},
				stop: api.StopToolUse, in: 20, cached: 5, out: 9})))
			_, err := c.Call(context.Background(), msgs, nil)
			var oe *OutputError
			if !errors.As(err, &oe) || oe.Code != api.CodeModelOutputInvalid {
				t.Fatalf("err = %v", err)
			}
			p := partialOf(t, err)
			if !p.UsageComplete || p.StopReason != api.StopToolUse {
				t.Errorf("partial = %+v, want complete with stop tool_use", p)
			}
			sameUsage(t, p.Usage, usageOf(15, 5, 20, 9))
		})
		t.Run(d.provider+"/refused-before-stream", func(t *testing.T) {
			f, c := open(t, d, Limits{})
			f.set(status(http.StatusTooManyRequests, d.errorBody("rate_limit_exceeded", "slow down")))
			_, err := c.Call(context.Background(), msgs, nil)
			var pe *PartialError
			if errors.As(err, &pe) {
				t.Fatalf("err = %v carries a partial answer, but none arrived", err)
			}
		})
	}
}
