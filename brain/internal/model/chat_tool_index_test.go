package model

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// ollamaChunk is one chat.completion.chunk as Ollama's OpenAI-compatible
// endpoint writes it: every delta carries the role and a content string,
// and each tool call arrives whole.
func ollamaChunk(delta map[string]any, finish *string) string {
	delta["role"] = "assistant"
	if _, ok := delta["content"]; !ok {
		delta["content"] = ""
	}
	return event("", map[string]any{
		"id": "chatcmpl-386", "object": "chat.completion.chunk", "created": 1744200000,
		"model": "qwen2.5-coder:7b", "system_fingerprint": "fp_ollama",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
}

// TestChatToolCallsSharingAnIndex: a server that numbers every streamed
// tool call 0 (Ollama) still answers two tool calls, told apart by their
// ids, not one call whose arguments run together.
func TestChatToolCallsSharingAnIndex(t *testing.T) {
	f, c := open(t, chatDialect, Limits{})
	finish := "tool_calls"
	call := func(id, city string) map[string]any {
		return map[string]any{"tool_calls": []any{map[string]any{"id": id, "index": 0, "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"` + city + `"}`}}}}
	}
	f.set(sse(ollamaChunk(call("call_4zkd9a1b", "Paris"), nil) +
		ollamaChunk(call("call_m2x8q0rt", "Rome"), nil) +
		ollamaChunk(map[string]any{}, &finish) +
		event("", map[string]any{"id": "chatcmpl-386", "object": "chat.completion.chunk", "created": 1744200000,
			"model": "qwen2.5-coder:7b", "system_fingerprint": "fp_ollama", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 180, "completion_tokens": 40, "total_tokens": 220}}) +
		"data: [DONE]\n\n"))
	res, err := c.Call(context.Background(), Request{Tools: []api.ToolDefinition{weatherTool},
		Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Weather in Paris and Rome?"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 2 {
		t.Fatalf("result %+v", res)
	}
	for i, want := range []struct{ id, input string }{{"call_4zkd9a1b", `{"city":"Paris"}`}, {"call_m2x8q0rt", `{"city":"Rome"}`}} {
		b := res.Message.Content[i]
		if b.Type != api.BlockToolUse || b.ID != want.id || b.Name != "get_weather" || string(b.Input) != want.input {
			t.Errorf("block %d = %+v, want %s %s", i, b, want.id, want.input)
		}
	}
}
