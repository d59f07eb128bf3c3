package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestUsageNeverNegative: a provider that reports more cached input than
// input in all, a count below zero, or counts whose total is too large to
// hold, does not have a count below zero recorded: what cannot be a count
// is left out, as a count the provider does not report is, and the
// counts it reports that can be are kept. Before, the uncached input of a
// Responses or Chat answer was recorded as the difference (-15 here),
// and an Anthropic total as the wrapped sum.
func TestUsageNeverNegative(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		d    dialect
		tr   turn
		want Usage
	}{
		{"responses/cached-beyond-input", responsesDialect, turn{in: 10, cached: 25, out: 7},
			Usage{TotalInputTokens: n(10), CacheReadInputTokens: n(25), OutputTokens: n(7)}},
		{"chat/cached-beyond-input", chatDialect, turn{in: 10, cached: 25, out: 7},
			Usage{TotalInputTokens: n(10), CacheReadInputTokens: n(25), OutputTokens: n(7)}},
		// Anthropic reports uncached input: 10 in all with 25 of it
		// cached is an input_tokens of -15.
		{"anthropic/negative-input", anthropicDialect, turn{in: 10, cached: 25, out: 7},
			Usage{CacheReadInputTokens: n(25), CacheCreationInputTokens: n(0), OutputTokens: n(7)}},
		{"responses/negative-output", responsesDialect, turn{in: 10, cached: 4, out: -3},
			Usage{InputTokens: n(6), TotalInputTokens: n(10), CacheReadInputTokens: n(4)}},
		{"chat/negative-output", chatDialect, turn{in: 10, cached: 4, out: -3},
			Usage{InputTokens: n(6), TotalInputTokens: n(10), CacheReadInputTokens: n(4)}},
		{"anthropic/negative-output", anthropicDialect, turn{in: 10, cached: 4, out: -3},
			Usage{InputTokens: n(6), TotalInputTokens: n(10), CacheReadInputTokens: n(4), CacheCreationInputTokens: n(0)}},
		{"responses/negative-input", responsesDialect, turn{in: -5, cached: 0, out: 2},
			Usage{CacheReadInputTokens: n(0), OutputTokens: n(2)}},
		// 5 uncached and math.MaxInt64 cached: a total no count holds.
		{"anthropic/total-beyond-int64", anthropicDialect, turn{in: math.MinInt64 + 4, cached: math.MaxInt64, out: 2},
			Usage{InputTokens: n(5), CacheReadInputTokens: n(math.MaxInt64), CacheCreationInputTokens: n(0), OutputTokens: n(2)}},
	}
	req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.tr.text, tc.tr.stop = []string{"Hi"}, api.StopEndTurn
			whole := tc.d.render(tc.tr)
			f, c := open(t, tc.d, Limits{})
			f.set(sse(whole))
			res, err := c.Call(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkUsage(t, res.Usage, tc.want)

			// A call that fails once the usage arrived records it alike.
			var failing string
			switch tc.d.provider {
			case ProviderOpenAI:
				completed := whole[strings.Index(whole, "event: response.completed"):]
				failing = whole[:len(whole)-len(completed)] + strings.ReplaceAll(strings.ReplaceAll(completed,
					"response.completed", "response.failed"), `"status":"completed"`, `"status":"failed"`)
			case ProviderOpenAIChat:
				failing = strings.TrimSuffix(whole, "data: [DONE]\n\n") + tc.d.streamError("server_error", "boom")
			case ProviderAnthropic:
				failing = strings.TrimSuffix(whole, event("message_stop", map[string]any{"type": "message_stop"})) +
					event("error", map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "boom"}})
			}
			f.set(sse(failing))
			_, err = c.Call(context.Background(), req, nil)
			var pe *PartialError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a partial failure", err)
			}
			checkUsage(t, pe.Partial.Usage, tc.want)
		})
	}
}

// checkUsage compares every count of got with want, nil meaning absent.
func checkUsage(t *testing.T, got, want Usage) {
	t.Helper()
	fields := []struct {
		name      string
		got, want *int64
	}{
		{"input_tokens", got.InputTokens, want.InputTokens},
		{"output_tokens", got.OutputTokens, want.OutputTokens},
		{"cache_creation_input_tokens", got.CacheCreationInputTokens, want.CacheCreationInputTokens},
		{"cache_read_input_tokens", got.CacheReadInputTokens, want.CacheReadInputTokens},
		{"total_input_tokens", got.TotalInputTokens, want.TotalInputTokens},
	}
	for _, f := range fields {
		switch {
		case f.got != nil && *f.got < 0:
			t.Errorf("%s recorded as %d", f.name, *f.got)
		case (f.got == nil) != (f.want == nil) || (f.got != nil && *f.got != *f.want):
			t.Errorf("%s = %s, want %s", f.name, show(f.got), show(f.want))
		}
	}
}

func show(p *int64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}
