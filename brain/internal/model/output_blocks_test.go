package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestManyEmptyBlocksCountTowardOutput: an answer made of a great many
// empty blocks (Anthropic content blocks of a kind kept verbatim,
// Responses output items) is bounded by MaxOutputBytes as the message it
// is recorded as, not only by the bytes inside its blocks: each block
// counts what it adds to the message, so a provider cannot make a
// message many times the bound out of blocks that each hold a few bytes
// (a compaction's output items likewise).
func TestManyEmptyBlocksCountTowardOutput(t *testing.T) {
	const bound, blocks = 64 << 10, 20000 // 40 KB of block content
	msgs := Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}
	type answer struct {
		d     dialect
		reply func(http.ResponseWriter, *recorded)
		opts  string
	}
	answers := map[string]answer{}
	var b strings.Builder
	b.WriteString(anthropicStart(10, 0))
	for i := range blocks {
		fmt.Fprintf(&b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{}}\n\n", i)
	}
	b.WriteString(event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}, "usage": map[string]any{"output_tokens": 1}}))
	b.WriteString(event("message_stop", map[string]any{"type": "message_stop"}))
	answers["anthropic"] = answer{anthropicDialect, sse(b.String()), ""}
	items := make([]any, blocks)
	for i := range items {
		items[i] = map[string]any{}
	}
	answers["openai"] = answer{responsesDialect, sse(event("response.completed", map[string]any{"type": "response.completed", "response": responsesEnvelope("completed", items, nil, nil)})), ""}
	compacted := make([]any, blocks/5) // 48 KB of items
	for i := range compacted {
		compacted[i] = map[string]any{"type": "x"}
	}
	answers["openai/compact"] = answer{responsesDialect, status(http.StatusOK, mustJSON(map[string]any{"object": "response.compaction", "output": compacted})), `{"operation":"compact"}`}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			f, c := open(t, a.d, Limits{MaxOutputBytes: bound})
			f.set(a.reply)
			req := msgs
			if a.opts != "" {
				req.Options = json.RawMessage(a.opts)
			}
			res, err := c.Call(context.Background(), req, nil)
			if err != nil {
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.Code != CodeResponseTooLarge {
					t.Fatalf("err = %v, want %s", err, CodeResponseTooLarge)
				}
				return
			}
			recorded, _ := json.Marshal(res.Message)
			t.Fatalf("an answer of %d blocks was accepted as a message of %d bytes, beyond the %d-byte bound", len(res.Message.Content), len(recorded), bound)
		})
	}
}
