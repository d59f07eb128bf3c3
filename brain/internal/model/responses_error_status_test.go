package model

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestResponsesErrorEventStatus: an error reported inside a Responses
// stream whose code is a number (as local servers serving the Responses
// API give it, flat or nested in an "error" object, or in the error of
// response.failed) is judged by the HTTP status it stands for, as a Chat
// Completions error event and a status answer are: a server error or a
// rate limit is retryable, a refused request is not.
func TestResponsesErrorEventStatus(t *testing.T) {
	created := event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)})
	failed := func(e map[string]any) string {
		r := responsesEnvelope("failed", nil, nil, nil)
		r["error"] = e
		return event("response.failed", map[string]any{"type": "response.failed", "sequence_number": 1, "response": r})
	}
	cases := []struct {
		name      string
		ev        string
		code, msg string
		retryable bool
	}{
		{"flat-503", event("error", map[string]any{"type": "error", "sequence_number": 1, "code": 503, "message": "Loading model", "param": nil}),
			"stream_error", "Loading model", true},
		{"flat-429", event("error", map[string]any{"type": "error", "sequence_number": 1, "code": 429, "message": "Too many requests", "param": nil}),
			"stream_error", "Too many requests", true},
		{"flat-400", event("error", map[string]any{"type": "error", "sequence_number": 1, "code": 400, "message": "the request exceeds the available context size", "param": nil}),
			"stream_error", "the request exceeds the available context size", false},
		{"nested-429-quota", event("error", map[string]any{"type": "error", "sequence_number": 1, "error": map[string]any{"message": "You exceeded your current quota.", "type": "insufficient_quota", "param": nil, "code": 429}}),
			"insufficient_quota", "You exceeded your current quota.", false},
		{"nested-500", event("error", map[string]any{"type": "error", "sequence_number": 1, "error": map[string]any{"message": "GenerationError: the engine failed", "type": "InternalServerError", "param": nil, "code": 500}}),
			"InternalServerError", "GenerationError: the engine failed", true},
		{"nested-400", event("error", map[string]any{"type": "error", "sequence_number": 1, "error": map[string]any{"message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": nil, "code": 400}}),
			"BadRequestError", "This model's maximum context length is 4096 tokens.", false},
		{"failed-503", failed(map[string]any{"code": 503, "message": "The engine is not ready", "type": "ServiceUnavailableError"}),
			"ServiceUnavailableError", "The engine is not ready", true},
		{"failed-400", failed(map[string]any{"code": 400, "message": "Bad request", "type": "BadRequestError"}),
			"BadRequestError", "Bad request", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := open(t, responsesDialect, Limits{})
			f.set(sse(created + tc.ev))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Code != tc.code || pe.Message != tc.msg || pe.Retryable != tc.retryable {
				t.Fatalf("code %q message %q retryable %v, want %q %q %v", pe.Code, pe.Message, pe.Retryable, tc.code, tc.msg, tc.retryable)
			}
		})
	}
}
