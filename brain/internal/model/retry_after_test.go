package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestRetryAfterReported: the wait a provider asks for on a retryable
// answer is reported with the error, and the call is still sent once.
func TestRetryAfterReported(t *testing.T) {
	msgs := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}
	for _, d := range dialects {
		for _, tc := range []struct {
			name   string
			status int
			header map[string]string
			want   time.Duration
		}{
			{"seconds", http.StatusTooManyRequests, map[string]string{"Retry-After": "7"}, 7 * time.Second},
			{"milliseconds", http.StatusTooManyRequests, map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, 1500 * time.Millisecond},
			{"date", http.StatusServiceUnavailable, map[string]string{"Retry-After": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, time.Hour},
			{"garbage", http.StatusTooManyRequests, map[string]string{"Retry-After": "soon"}, 0},
			// A daily quota's wait is reported, as a day at most.
			{"seconds-beyond-a-day", http.StatusTooManyRequests, map[string]string{"Retry-After": "172800"}, maxRetryAfter},
			{"milliseconds-beyond-a-day", http.StatusTooManyRequests, map[string]string{"Retry-After-Ms": "90000000"}, maxRetryAfter},
			// A number of milliseconds too large to read is a wait longer
			// than a day, not none (as one of seconds is).
			{"milliseconds-too-large-to-read", http.StatusTooManyRequests, map[string]string{"Retry-After-Ms": "1e400", "Retry-After": "2"}, maxRetryAfter},
			{"not-retryable", http.StatusBadRequest, map[string]string{"Retry-After": "7"}, 0},
		} {
			t.Run(d.provider+"/"+tc.name, func(t *testing.T) {
				f, c := open(t, d, Limits{})
				body := d.errorBody("rate_limit_exceeded", "slow down")
				f.set(func(w http.ResponseWriter, _ *recorded) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, body)
				})
				_, err := c.Call(context.Background(), msgs, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v", err)
				}
				if got := pe.RetryAfter; got > tc.want || got < tc.want-2*time.Second || (tc.want == 0 && got != 0) {
					t.Errorf("RetryAfter = %v, want %v", got, tc.want)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			})
		}
	}
}
