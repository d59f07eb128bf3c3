package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestResponsesNestedErrorEvent: the Responses API sends a mid-stream
// error event with its fields nested in an "error" object (the form the
// live API answers, beside the flat form of its reference); the provider's
// code, message and retryable verdict survive either form.
func TestResponsesNestedErrorEvent(t *testing.T) {
	created := event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)})
	cases := []struct {
		name      string
		err       map[string]any
		code, msg string
		retryable bool
	}{
		{"rate-limit", map[string]any{"type": "tokens", "code": "rate_limit_exceeded", "message": "Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 6.57s.", "param": nil},
			"rate_limit_exceeded", "Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 6.57s.", true},
		{"too-many-requests", map[string]any{"type": "too_many_requests", "code": "too_many_requests", "message": "Too Many Requests", "param": nil},
			"too_many_requests", "Too Many Requests", true},
		{"quota", map[string]any{"type": "insufficient_quota", "code": "credit_balance_exhausted", "message": "You have no credits remaining.", "param": nil},
			"credit_balance_exhausted", "You have no credits remaining.", false},
		{"code-null", map[string]any{"type": "server_error", "code": nil, "message": "The server had an error while processing your request.", "param": nil},
			"server_error", "The server had an error while processing your request.", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := open(t, responsesDialect, Limits{})
			f.set(sse(created + event("error", map[string]any{"type": "error", "sequence_number": 1, "error": tc.err})))
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

// TestAnthropicOutputConfigKeepsFormat: output_config carries both the
// effort option and the structured-output format; an effort given as an
// option must not drop the format of response_format.
func TestAnthropicOutputConfigKeepsFormat(t *testing.T) {
	f, c := open(t, anthropicDialect, Limits{})
	f.set(sse(renderAnthropic(turn{text: []string{`{"city":"Oslo"}`}, stop: api.StopEndTurn})))
	req := Request{
		Messages:       []api.Message{api.UserMessage(api.UserInput{Message: "x"})},
		ResponseFormat: json.RawMessage(`{"type":"json_schema","name":"weather","schema":` + schema + `}`),
		Options:        json.RawMessage(`{"output_config":{"effort":"low"}}`),
	}
	if _, err := c.Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.last(t).Body["output_config"])
	sameJSON(t, got, `{"effort":"low","format":{"type":"json_schema","schema":`+schema+`}}`)

	// A format in both places is a conflict, refused before sending.
	n := len(f.requests())
	req.Options = json.RawMessage(`{"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`)
	if _, err := c.Call(context.Background(), req, nil); !errors.Is(err, ErrInvalidRequest) || len(f.requests()) != n {
		t.Fatalf("err = %v, %d requests", err, len(f.requests())-n)
	}
	// Without a response_format the option goes as given.
	req.ResponseFormat = nil
	req.Options = json.RawMessage(`{"output_config":{"effort":"high"}}`)
	if _, err := c.Call(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = json.Marshal(f.last(t).Body["output_config"])
	sameJSON(t, got, `{"effort":"high"}`)
}

// TestKeepAlivesDoNotCountTowardFrame: comment lines sent as keep-alives
// between events (": PROCESSING\n\n") are not part of any event, so many of
// them while the model thinks do not make the next event exceed the frame
// bound.
func TestKeepAlivesDoNotCountTowardFrame(t *testing.T) {
	keepAlives := strings.Repeat(": PROCESSING\n\n", 200) // 2800 bytes
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			f, c := open(t, d, Limits{MaxFrameBytes: 1024})
			f.set(sse(keepAlives + d.render(turn{text: []string{"o", "k"}, stop: api.StopEndTurn})))
			res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Message.Text() != "ok" || res.StopReason != api.StopEndTurn {
				t.Fatalf("result %+v %q", res.Message, res.StopReason)
			}
		})
	}
}

// TestKeyNotInErrorCode: a provider (or a gateway in front of it) that
// echoes the key in an error's code field, in a status answer or in a
// stream's error event, does not put it in the error.
func TestKeyNotInErrorCode(t *testing.T) {
	for _, d := range dialects {
		for name, reply := range map[string]string{"status": d.errorBody("bad_key_"+testKey, "bad key"), "stream": d.streamError("bad_key_"+testKey, "bad key")} {
			t.Run(d.provider+"/"+name, func(t *testing.T) {
				f, c := open(t, d, Limits{})
				if name == "status" {
					f.set(status(401, reply))
				} else {
					f.set(sse(reply))
				}
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v", err)
				}
				if strings.Contains(err.Error(), testKey) || strings.Contains(pe.Code, testKey) {
					t.Fatalf("the API key leaked: code %q", pe.Code)
				}
			})
		}
	}
}
