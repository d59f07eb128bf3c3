package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// Scripted is the offline model. When the text of the latest user message
// is a JSON object with any of the keys of Script it follows the script;
// otherwise it answers "echo: <text>" with stop reason end_turn.
type Scripted struct{}

// Script is what the latest user message may ask of the scripted model.
type Script struct {
	// ToolCalls are returned as tool_use blocks (ids call_1, call_2, ...)
	// by the first model call of the turn.
	ToolCalls []ScriptToolCall `json:"tool_calls,omitempty"`
	// Reply is the final text. After tool results, without Reply the model
	// answers a JSON array of the results it received.
	Reply *string `json:"reply,omitempty"`
	// DelayMs delays every call, honouring cancellation.
	DelayMs int64 `json:"delay_ms,omitempty"`
	// Fail makes the call fail with that provider error.
	Fail *ScriptFailure `json:"fail,omitempty"`
	// Stream delivers the answer's text as several live deltas first
	// (none for an answer without text).
	Stream bool `json:"stream,omitempty"`
}

// ScriptToolCall is one scripted tool call.
type ScriptToolCall struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ScriptFailure is a scripted provider error.
type ScriptFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ParseScript reports the script of text, if text is a JSON object with at
// least one script key.
func ParseScript(text string) (Script, bool) {
	if t := strings.TrimLeft(text, " \t\r\n"); t == "" || t[0] != '{' {
		return Script{}, false // not a JSON object: plain text
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &keys); err != nil || keys == nil {
		return Script{}, false
	}
	known := false
	for _, k := range []string{"tool_calls", "reply", "delay_ms", "fail", "stream"} {
		if _, ok := keys[k]; ok {
			known = true
		}
	}
	if !known {
		return Script{}, false
	}
	var s Script
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return Script{}, false
	}
	return s, true
}

// Call answers req per the script of its latest user message.
func (Scripted) Call(ctx context.Context, req Request, onDelta func(Delta)) (Result, error) {
	userIdx, text := latestUserText(req.Messages)
	script, scripted := ParseScript(text)
	if script.DelayMs > 0 {
		// Beyond a time.Duration's range the delay is for ever (until ctx
		// ends), not a wrapped one.
		d := time.Duration(math.MaxInt64)
		if script.DelayMs < int64(d/time.Millisecond) {
			d = time.Duration(script.DelayMs) * time.Millisecond
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, context.Cause(ctx)
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return Result{}, context.Cause(ctx)
	}
	if script.Fail != nil {
		return Result{}, &ProviderError{Code: script.Fail.Code, Message: script.Fail.Message}
	}
	results := toolResultsAfter(req.Messages, userIdx)
	var res Result
	switch {
	case !scripted:
		res = textResult("echo: " + text)
	case len(script.ToolCalls) > 0 && results == nil:
		msg := api.Message{Role: api.RoleAssistant}
		for i, c := range script.ToolCalls {
			// As from a provider: a tool call names a tool.
			if strings.TrimSpace(c.Name) == "" {
				return Result{}, namesNoTool(fmt.Sprintf("call_%d", i+1))
			}
			input := c.Input
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			// As from a provider: a tool input is a JSON object.
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
				if err == nil {
					err = errors.New("null")
				}
				return Result{}, invalidToolInput(c.Name, err)
			}
			msg.Content = append(msg.Content, api.ContentBlock{
				Type: api.BlockToolUse, ID: fmt.Sprintf("call_%d", i+1), Name: c.Name, Input: input,
			})
		}
		res = Result{Message: msg, StopReason: api.StopToolUse}
	case script.Reply != nil:
		res = textResult(*script.Reply)
	case results != nil:
		b, _ := json.Marshal(results)
		res = textResult(string(b))
	default:
		res = textResult("echo: " + text)
	}
	in, out := int64(len(req.Messages)), int64(len(strings.Fields(res.Message.Text())))
	res.Usage = Usage{InputTokens: &in, OutputTokens: &out}
	// An answer without text (tool calls, an empty reply) streams no
	// fragment, as a provider's would not.
	if text := res.Message.Text(); script.Stream && onDelta != nil && text != "" {
		for _, part := range splitDeltas(text) {
			if err := ctx.Err(); err != nil {
				return Result{}, context.Cause(ctx)
			}
			onDelta(Delta{Text: part})
		}
	}
	return res, nil
}

func textResult(text string) Result {
	return Result{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock(text)}}, StopReason: api.StopEndTurn}
}

// latestUserText finds the latest user message that carries text.
func latestUserText(msgs []api.Message) (int, string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != api.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type == api.BlockText {
				return i, m.Text()
			}
		}
	}
	return -1, ""
}

// toolResultsAfter collects the contents of tool_result blocks after index
// from; nil when there are none.
func toolResultsAfter(msgs []api.Message, from int) []json.RawMessage {
	var out []json.RawMessage
	for _, m := range msgs[from+1:] {
		for _, b := range m.Content {
			if b.Type == api.BlockToolResult {
				c := b.Content
				if len(c) == 0 {
					c = json.RawMessage("null")
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// splitDeltas cuts text into at least two fragments when it can.
func splitDeltas(text string) []string {
	if len(text) < 2 {
		return []string{text}
	}
	n := 4
	if len(text) < n {
		n = len(text)
	}
	var parts []string
	size := (len(text) + n - 1) / n
	for len(text) > 0 {
		k := size
		if k > len(text) {
			k = len(text)
		}
		for k < len(text) && (text[k]&0xC0) == 0x80 {
			k++
		}
		parts = append(parts, text[:k])
		text = text[k:]
	}
	return parts
}
