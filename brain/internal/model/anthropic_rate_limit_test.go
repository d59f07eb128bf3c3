package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestAnthropic429ByErrorType: Anthropic names what failed in the error
// type of its body. A 429 of type rate_limit_error is a limit reached,
// which passes: retryable, with the wait asked for. A 429 whose type is
// one of the Messages API's final errors (the request too large, invalid,
// refused for billing or permission), as a gateway in front of it may
// answer, fails the same way when sent again: not retryable, and no wait
// reported. A 429 whose body names no type keeps the status's verdict.
func TestAnthropic429ByErrorType(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		code      string
		retryable bool
	}{
		{"rate-limit", anthropicDialect.errorBody("rate_limit_error", "This request would exceed the rate limit for your organization of 30,000 input tokens per minute."),
			"rate_limit_error", true},
		{"too-large", anthropicDialect.errorBody("request_too_large", "Request exceeds the maximum allowed number of bytes."),
			"request_too_large", false},
		{"invalid", anthropicDialect.errorBody("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
			"invalid_request_error", false},
		{"billing", anthropicDialect.errorBody("billing_error", "Your credit balance is too low to access the Anthropic API."),
			"billing_error", false},
		{"permission", anthropicDialect.errorBody("permission_error", "Your API key does not have permission to use the specified resource."),
			"permission_error", false},
		{"no-type", `Too Many Requests`, "http_429", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := open(t, anthropicDialect, Limits{})
			f.set(func(w http.ResponseWriter, _ *recorded) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "20")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, tc.body)
			})
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Code != tc.code || pe.Retryable != tc.retryable || (pe.RetryAfter > 0) != tc.retryable {
				t.Errorf("code %q retryable %v retry after %v, want %q retryable %v", pe.Code, pe.Retryable, pe.RetryAfter, tc.code, tc.retryable)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}
