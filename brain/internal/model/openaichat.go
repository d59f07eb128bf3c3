package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
)

// openAIChat is the client of OpenAI Chat Completions
// (POST {base}/chat/completions), the dialect local servers speak. It uses
// only the widely implemented subset: system/user/assistant/tool roles
// (developer messages are sent as system), max_tokens (max_completion_tokens
// to OpenAI itself), function tools and stream_options.include_usage.
type openAIChat struct {
	t     transport
	model string
	// maxTokens is the field max_output_tokens is sent as (see
	// chatMaxTokensField).
	maxTokens string
}

const dialectChat = "openai chat completions"

// chatToolCall is a tool call being streamed: its arguments are
// appended fragment by fragment.
type chatToolCall struct {
	ID        string
	Name      string
	Arguments strings.Builder
}

type chatUsage struct {
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// Prepare checks and encodes req as one streaming Chat Completions
// request.
func (c *openAIChat) Prepare(req Request) (Prepared, error) {
	return prepareBody(dialectChat, req, c.body, c.send)
}

// Call prepares req and sends it.
func (c *openAIChat) Call(ctx context.Context, req Request, onDelta func(Delta)) (Result, error) {
	return callPrepared(ctx, c, req, onDelta)
}

// send posts an encoded Chat Completions request and reads its stream.
func (c *openAIChat) send(ctx context.Context, body []byte, onDelta func(Delta)) (Result, error) {
	h := http.Header{}
	if c.t.key != "" {
		h.Set("Authorization", "Bearer "+c.t.key)
	}
	live := newOutput(c.t.limits, onDelta)
	var (
		text, refusal strings.Builder
		calls         []*chatToolCall
		slot          = map[int]int{}  // wire index → the call it writes to
		claimed       = map[int]bool{} // calls some wire index wrote to
		finish        string
		usage         *chatUsage
		answered      bool
	)
	done, err := c.t.stream(ctx, "/chat/completions", h, body, func(_ string, data []byte) (bool, error) {
		if strings.TrimSpace(string(data)) == "[DONE]" {
			return true, nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					Refusal   *string `json:"refusal"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsage      `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return false, invalid(dialectChat, "chunk", err)
		}
		answered = true
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return false, c.t.streamError(chunk.Error)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			d := ch.Delta
			if d.Content != nil && *d.Content != "" {
				text.WriteString(*d.Content)
				if err := live.text(*d.Content); err != nil {
					return false, err
				}
			}
			if d.Refusal != nil && *d.Refusal != "" {
				refusal.WriteString(*d.Refusal)
				if err := live.text(*d.Refusal); err != nil {
					return false, err
				}
			}
			for _, tc := range d.ToolCalls {
				if tc.Index < 0 || tc.Index > 1024 {
					return false, invalid(dialectChat, fmt.Sprintf("tool call index %d", tc.Index), nil)
				}
				// A delta names its call by index; a new id at an index
				// already in use is another call (Ollama numbers every
				// tool call of a stream 0).
				at, ok := slot[tc.Index]
				switch {
				case !ok && (tc.Index >= len(calls) || !claimed[tc.Index]):
					for len(calls) <= tc.Index {
						calls = append(calls, &chatToolCall{})
					}
					at = tc.Index
				case !ok || (tc.ID != "" && calls[at].ID != "" && calls[at].ID != tc.ID):
					if len(calls) > 1024 {
						return false, invalid(dialectChat, "too many tool calls", nil)
					}
					calls = append(calls, &chatToolCall{})
					at = len(calls) - 1
				}
				slot[tc.Index], claimed[at] = at, true
				call := calls[at]
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Function.Name != "" {
					call.Name = tc.Function.Name
				}
				call.Arguments.WriteString(tc.Function.Arguments)
				if err := live.charge(len(tc.Function.Arguments)); err != nil {
					return false, err
				}
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finish = *ch.FinishReason
			}
		}
		return false, nil
	})
	if err == nil && !done && finish == "" {
		err = &ProviderError{Code: CodeStreamTruncated, Message: "openai chat completions: the stream ended before a finish_reason", Retryable: true}
	}
	if err != nil {
		if !answered {
			return Result{}, err
		}
		return Result{}, withPartial(err, Partial{StopReason: chatStop(finish), Usage: usage.usage()})
	}
	a := assembled{redact: c.t.redact}
	a.addText(text.String())
	if refusal.Len() > 0 {
		a.refused = true
		a.addText(refusal.String())
	}
	for i, call := range calls {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		a.addToolUse(id, call.Name, call.Arguments.String())
	}
	stop := chatStop(finish)
	if stop == "" {
		stop = api.StopUnknown
	}
	if a.refused && stop == api.StopEndTurn {
		stop = api.StopRefusal
	}
	return a.result(stop, usage.usage(), c.t.limits)
}

// chatStop maps a finish_reason; none is an empty stop reason.
func chatStop(finish string) StopReason {
	switch finish {
	case "":
		return ""
	case "stop":
		return api.StopEndTurn
	case "tool_calls", "function_call":
		return api.StopToolUse
	case "length":
		return api.StopMaxTokens
	case "content_filter":
		return api.StopRefusal
	}
	return api.StopUnknown
}

// usage maps the usage chunk (zero when none arrived).
func (c *chatUsage) usage() Usage {
	var u Usage
	if c == nil {
		return u
	}
	u.InputTokens, u.TotalInputTokens, u.OutputTokens = c.PromptTokens, c.PromptTokens, c.CompletionTokens
	if d := c.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		u.CacheReadInputTokens = d.CachedTokens
		u.InputTokens = uncached(c.PromptTokens, d.CachedTokens)
	}
	if d := c.CompletionTokensDetails; d != nil {
		u.ReasoningTokens = d.ReasoningTokens
	}
	return counted(u)
}

// body builds the request body.
func (c *openAIChat) body(req Request) (map[string]any, error) {
	opts, err := options(dialectChat, req.Options, "temperature", "top_p", "stop", "seed", "frequency_penalty", "presence_penalty", "reasoning_effort")
	if err != nil {
		return nil, err
	}
	if err := outputBound(dialectChat, req); err != nil {
		return nil, err
	}
	msgs := []map[string]any{}
	if req.System != nil && *req.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": *req.System})
	}
	for _, m := range req.Messages {
		more, err := chatMessages(m)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, more...)
	}
	msgs = toolMessagesNext(joinAfterToolCalls(msgs))
	body := map[string]any{
		"model":          c.model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
				"name": t.Name, "description": t.Description, "parameters": toolSchema(t.InputSchema),
			}})
		}
		body["tools"] = tools
	}
	if req.MaxOutputTokens != nil {
		body[orDefault(c.maxTokens, "max_tokens")] = *req.MaxOutputTokens
	}
	if hasResponseFormat(req.ResponseFormat) {
		rf := req.ResponseFormat
		if name, schema, strict, ok := jsonSchemaFormat(rf); ok {
			js := map[string]any{"name": orDefault(name, "response"), "schema": schema}
			if strict != nil {
				js["strict"] = *strict
			}
			b, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": js})
			rf = b
		}
		body["response_format"] = rf
	}
	for k, v := range opts {
		body[k] = v
	}
	return body, nil
}

// joinAfterToolCalls joins an assistant message to the assistant message
// with tool_calls right before it (a transcript that holds a response's
// calls as one message each): its text follows the earlier text, as the
// text blocks of one message do, and its calls the earlier calls. Nothing
// may come between an assistant message with tool_calls and their tool
// messages, so both messages' calls are answered after the joined one.
func joinAfterToolCalls(msgs []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		n := len(out)
		if n == 0 || m["role"] != "assistant" || out[n-1]["role"] != "assistant" {
			out = append(out, m)
			continue
		}
		prev := out[n-1]
		calls, _ := prev["tool_calls"].([]map[string]any)
		if len(calls) == 0 {
			out = append(out, m)
			continue
		}
		more, _ := m["tool_calls"].([]map[string]any)
		prev["tool_calls"] = append(calls, more...)
		text, _ := m["content"].(string)
		if text == "" {
			continue
		}
		before, _ := prev["content"].(string)
		prev["content"] = before + text
	}
	return out
}

// toolMessagesNext moves the tool messages that answer an assistant
// message's tool calls to right after it, ahead of the messages between
// them (a developer note, a user message written while the tools ran):
// Chat Completions refuses an assistant message with tool_calls that is
// not followed at once by a tool message for each call. The other
// messages keep their order.
func toolMessagesNext(msgs []map[string]any) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	moved := make([]bool, len(msgs))
	for i, m := range msgs {
		if moved[i] {
			continue
		}
		out = append(out, m)
		calls, _ := m["tool_calls"].([]map[string]any)
		if m["role"] != "assistant" || len(calls) == 0 {
			continue
		}
		ids := map[string]bool{}
		for _, c := range calls {
			if id, ok := c["id"].(string); ok {
				ids[id] = true
			}
		}
		for j := i + 1; j < len(msgs) && msgs[j]["role"] != "assistant"; j++ {
			if id, ok := msgs[j]["tool_call_id"].(string); ok && msgs[j]["role"] == "tool" && ids[id] && !moved[j] {
				out = append(out, msgs[j])
				moved[j] = true
			}
		}
	}
	return out
}

// chatMessages maps one Brain message to Chat Completions messages: tool
// results become tool messages, in order, before the message's other
// content.
func chatMessages(m api.Message) ([]map[string]any, error) {
	switch m.Role {
	case api.RoleAssistant:
		var text strings.Builder
		var calls []map[string]any
		for _, b := range m.Content {
			switch b.Type {
			case api.BlockText:
				text.WriteString(b.Text)
			case api.BlockToolUse:
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, map[string]any{"id": b.ID, "type": "function",
					"function": map[string]string{"name": b.Name, "arguments": args}})
			}
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		if text.Len() > 0 {
			msg["content"] = text.String()
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		} else if text.Len() == 0 {
			msg["content"] = ""
		}
		return []map[string]any{msg}, nil
	case api.RoleUser, api.RoleDeveloper:
		var out []map[string]any
		var parts []map[string]any
		onlyText := true
		for _, b := range m.Content {
			switch b.Type {
			case api.BlockText:
				parts = append(parts, map[string]any{"type": "text", "text": b.Text})
			case api.BlockImage:
				onlyText = false
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": b.URL}})
			case api.BlockFile:
				return nil, fmt.Errorf("%w: openai_chat cannot send file blocks by URL", ErrInvalidRequest)
			case api.BlockToolResult:
				out = append(out, map[string]any{"role": "tool", "tool_call_id": b.ToolUseID, "content": toolResultText(b.Content)})
				for _, md := range b.Media {
					if md.Type != api.BlockImage {
						return nil, fmt.Errorf("%w: openai_chat cannot send file blocks by URL", ErrInvalidRequest)
					}
					onlyText = false
					parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": md.URL}})
				}
			case api.BlockToolUse:
				return nil, fmt.Errorf("%w: tool_use in a %s message", ErrInvalidRequest, m.Role)
			}
		}
		role := "user"
		if m.Role == api.RoleDeveloper {
			role = "system"
			if !onlyText {
				return nil, fmt.Errorf("%w: media in a developer message", ErrInvalidRequest)
			}
		}
		switch {
		case len(parts) == 0:
		case onlyText:
			var s strings.Builder
			for _, p := range parts {
				s.WriteString(p["text"].(string))
			}
			out = append(out, map[string]any{"role": role, "content": s.String()})
		default:
			out = append(out, map[string]any{"role": role, "content": parts})
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: role %q", ErrInvalidRequest, m.Role)
}
