package model

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestToolCallWithoutName: a Chat Completions stream whose tool calls skip
// an index (or name no function) is model_output_invalid, not a tool_use
// block with an empty name that no tool can answer.
func TestToolCallWithoutName(t *testing.T) {
	f, c := open(t, chatDialect, Limits{})
	finish := "tool_calls"
	f.set(sse(chatChunk(map[string]any{"role": "assistant", "content": nil}, nil, nil) +
		chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "id": "call_b", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Rome"}`}}}}, nil, nil) +
		chatChunk(map[string]any{}, &finish, nil) + "data: [DONE]\n\n"))
	res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
	var oe *OutputError
	if !errors.As(err, &oe) || oe.Code != api.CodeModelOutputInvalid {
		t.Fatalf("Call = %+v, %v; want %s", res, err, api.CodeModelOutputInvalid)
	}
}
