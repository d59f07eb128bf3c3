package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestQuotaNotRetryable: OpenAI answers 429 both for a rate limit, which
// passes, and for an exhausted quota or spend limit (error type
// insufficient_quota), which waiting does not cure. It answers 429 with
// code rate_limit_exceeded also for a request that asks for more tokens
// than the per-minute limit allows at all ("Request too large"): sending
// it again cannot succeed either. Only a limit reached is retryable, and
// only it reports a wait.
func TestQuotaNotRetryable(t *testing.T) {
	cases := []case429{
		{"rate-limit", `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", true},
		{"insufficient-quota", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			"insufficient_quota", false},
		{"quota-code-null", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":null}}`,
			"insufficient_quota", false},
		{"spend-limit", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"project_spend_limit_exceeded"}}`,
			"project_spend_limit_exceeded", false},
		{"credits", `{"error":{"message":"You have no credits remaining.","type":"insufficient_quota","param":null,"code":"credit_balance_exhausted"}}`,
			"credit_balance_exhausted", false},
		{"tokens-reached", `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", true},
		{"too-large", `{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 36278. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", false},
		{"too-large-for-limit", `{"error":{"message":"Request too large for gpt-4.1-2025-04-14 (for limit gpt-4.1) in organization org-x on tokens per min (TPM): Limit 30000, Requested 37313. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			"rate_limit_exceeded", false},
	}
	for _, d := range []dialect{responsesDialect, chatDialect} {
		for _, tc := range cases {
			t.Run(d.provider+"/"+tc.name, func(t *testing.T) { check429(t, d, tc) })
		}
	}
}

// case429 is a 429 answered with body, and the error it must become.
type case429 struct {
	name      string
	body      string
	code      string
	retryable bool
}

// check429 answers one call of dialect d with tc's 429 (asking for a wait
// of 20 s) and checks the error's code and verdict: a wait reported only
// when retryable, and the call sent once.
func check429(t *testing.T, d dialect, tc case429) {
	t.Helper()
	f, c := open(t, d, Limits{})
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
}
