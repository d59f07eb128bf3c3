package model

import (
	"testing"
)

// TestAnthropic429ByErrorType: Anthropic names what failed in the error
// type of its body. A 429 of type rate_limit_error is a limit reached,
// which passes: retryable, with the wait asked for. A 429 whose type is
// one of the Messages API's final errors (the request too large, invalid,
// refused for billing or permission), as a gateway in front of it may
// answer, fails the same way when sent again: not retryable, and no wait
// reported. A 429 whose body names no type keeps the status's verdict.
func TestAnthropic429ByErrorType(t *testing.T) {
	cases := []case429{
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
		t.Run(tc.name, func(t *testing.T) { check429(t, anthropicDialect, tc) })
	}
}
