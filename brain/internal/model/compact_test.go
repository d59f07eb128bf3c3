package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// compactionAnswer is a /responses/compact answer: the kept user message
// and the encrypted compaction item.
func compactionAnswer() string {
	return mustJSON(map[string]any{
		"id": "resp_001", "object": "response.compaction", "created_at": 1764967971,
		"output": []any{
			map[string]any{"id": "msg_000", "type": "message", "status": "completed", "role": "user",
				"content": []any{map[string]any{"type": "input_text", "text": "Book a table for two"}}},
			map[string]any{"id": "cmp_001", "type": "compaction", "encrypted_content": "gAAAAABpM0Yj-...="},
		},
		"usage": map[string]any{"input_tokens": 139, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 438, "output_tokens_details": map[string]any{"reasoning_tokens": 64}, "total_tokens": 577},
	})
}

// TestResponsesCompact: the option operation "compact" posts the
// conversation to /responses/compact, and the compacted items come back
// verbatim as native blocks that the next request replays.
func TestResponsesCompact(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	f.set(status(http.StatusOK, compactionAnswer()))
	sys := "You are terse."
	req := conversation()
	req.System = &sys
	req.Tools = []api.ToolDefinition{weatherTool}
	req.MaxOutputTokens = nil
	req.Options = json.RawMessage(`{"operation":"compact"}`)
	res, err := c.Call(context.Background(), req, func(Delta) { t.Error("a compaction has no live output") })
	if err != nil {
		t.Fatal(err)
	}
	got := f.last(t)
	if got.Path != "/v1/responses/compact" || got.Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("sent to %s with Authorization %q", got.Path, got.Header.Get("Authorization"))
	}
	if got.Body["model"] != "gpt-test" || got.Body["instructions"] != sys || got.Body["input"] == nil {
		t.Errorf("body %s", got.Raw)
	}
	for _, k := range []string{"operation", "stream", "tools", "store", "include"} {
		if _, ok := got.Body[k]; ok {
			t.Errorf("compact request carries %q: %s", k, got.Raw)
		}
	}
	if res.StopReason != api.StopEndTurn || len(res.Message.Content) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, b := range res.Message.Content {
		if b.Type != api.BlockNative || b.Format != NativeOpenAIResponses {
			t.Fatalf("block %+v, want a native %s block", b, NativeOpenAIResponses)
		}
	}
	sameUsage(t, res.Usage, usageOf(139, 0, 139, 438))

	// The next request replays the compacted items as its input.
	f.set(sse(renderResponses(turn{text: []string{"Done."}, stop: api.StopEndTurn, in: 10, out: 2})))
	next := Request{Messages: []api.Message{res.Message, api.UserMessage(api.UserInput{Message: "and?"})}}
	if _, err := c.Call(context.Background(), next, nil); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(f.last(t).Raw, &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Input) != 3 || sent.Input[1]["type"] != "compaction" || sent.Input[1]["encrypted_content"] != "gAAAAABpM0Yj-...=" || sent.Input[0]["role"] != "user" {
		t.Errorf("replayed input %v", sent.Input)
	}
}

// TestResponsesCompactRefusals: an unknown operation, or options the
// compaction endpoint does not take, are refused before anything is sent;
// a provider error is a provider error.
func TestResponsesCompactRefusals(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	max := int64(5)
	for _, req := range []Request{
		{Messages: conversation().Messages, Options: json.RawMessage(`{"operation":"summarise"}`)},
		{Messages: conversation().Messages, Options: json.RawMessage(`{"operation":"compact","temperature":0.2}`)},
		{Messages: conversation().Messages, Options: json.RawMessage(`{"operation":"compact"}`), MaxOutputTokens: &max},
	} {
		if _, err := c.Call(context.Background(), req, nil); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("options %s: err = %v, want ErrInvalidRequest", req.Options, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	f.set(status(http.StatusBadRequest, responsesDialect.errorBody("invalid_request_error", "bad input")))
	_, err := c.Call(context.Background(), Request{Messages: conversation().Messages, Options: json.RawMessage(`{"operation":"compact"}`)}, nil)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != "invalid_request_error" {
		t.Fatalf("err = %v", err)
	}
	f.set(sse(renderResponses(turn{text: []string{"x"}, stop: api.StopEndTurn})))
	_, err = c.Call(context.Background(), Request{Messages: conversation().Messages, Options: json.RawMessage(`{"operation":"compact"}`)}, nil)
	if !errors.As(err, &pe) || pe.Code != CodeInvalidResponse {
		t.Fatalf("an event stream answering compact: err = %v", err)
	}
}
