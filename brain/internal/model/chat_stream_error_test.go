package model

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestChatStreamErrorStatus: local servers report an error met while
// streaming as an error object whose code is the HTTP status it stands for
// and whose type is their own name for it (vLLM and SGLang:
// {"message","type":"InternalServerError","param","code":500}; llama.cpp:
// {"code":503,"message","type":"unavailable_error"}). The status gives
// the verdict a status answer would get: a server error is retryable, a
// refused request is not.
func TestChatStreamErrorStatus(t *testing.T) {
	cases := []struct {
		name      string
		err       map[string]any
		code      string
		retryable bool
	}{
		{"vllm-500", map[string]any{"message": "GenerationError: the engine failed", "type": "InternalServerError", "param": nil, "code": 500}, "InternalServerError", true},
		{"vllm-503", map[string]any{"message": "The engine is not ready", "type": "ServiceUnavailableError", "param": nil, "code": 503}, "ServiceUnavailableError", true},
		{"vllm-400", map[string]any{"message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": nil, "code": 400}, "BadRequestError", false},
		{"llama.cpp-503", map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}, "unavailable_error", true},
		{"llama.cpp-400", map[string]any{"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}, "exceed_context_size_error", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := open(t, chatDialect, Limits{})
			f.set(sse(chatChunk(map[string]any{"role": "assistant", "content": "Hel"}, nil, nil) + event("", map[string]any{"error": tc.err})))
			_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v", err)
			}
			if pe.Code != tc.code || pe.Retryable != tc.retryable || pe.Message != tc.err["message"] {
				t.Errorf("code %q retryable %v message %q, want %q retryable %v", pe.Code, pe.Retryable, pe.Message, tc.code, tc.retryable)
			}
		})
	}
}
