package model

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestChatToolArgumentsInManyFragments: a Chat Completions tool call
// whose arguments stream as many small fragments (a file's content
// written token by token) is assembled in memory proportional to the
// arguments, not copied whole again for every fragment, which made a
// tool call of a few hundred kilobytes allocate gigabytes and hold the
// turn for seconds.
func TestChatToolArgumentsInManyFragments(t *testing.T) {
	const fragments, size = 32 << 10, 8 // 256 KiB of arguments
	var b strings.Builder
	b.WriteString(chatChunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "write_file", "arguments": `{"text":"`}}}}, nil, nil))
	piece := strings.Repeat("x", size)
	for range fragments {
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + piece + `"}}]}}]}` + "\n\n")
	}
	b.WriteString(chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `"}`}}}}, nil, nil))
	finish := "tool_calls"
	b.WriteString(chatChunk(map[string]any{}, &finish, nil) + "data: [DONE]\n\n")
	f, c := open(t, chatDialect, Limits{})
	f.set(sse(b.String()))
	req := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})},
		Tools: []api.ToolDefinition{{Name: "write_file", InputSchema: json.RawMessage(`{"type":"object"}`)}}}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := c.Call(context.Background(), req, nil)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	var input struct{ Text string }
	if len(res.Message.Content) != 1 || json.Unmarshal(res.Message.Content[0].Input, &input) != nil || len(input.Text) != fragments*size {
		t.Fatalf("content %.200v, want one tool call of %d bytes of text", res.Message.Content, fragments*size)
	}
	// The stream is ~3 MiB and each chunk is decoded once: what is
	// allocated is tens of megabytes, not the gigabytes of a copy of the
	// arguments per fragment.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("the call allocated %d MiB for %d KiB of tool arguments", alloc>>20, fragments*size>>10)
	}
}
