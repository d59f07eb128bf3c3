package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
)

// anthropicMessages is the client of the Anthropic Messages API
// (POST {base}/messages with x-api-key and anthropic-version). Thinking and
// other provider blocks are kept as native blocks and replayed verbatim.
type anthropicMessages struct {
	t     transport
	model string
}

const dialectAnthropic = "anthropic messages"

// newAnthropic is the Messages client of model name over t.
func newAnthropic(t transport, name string) *anthropicMessages {
	t.final = anthropicNeverFits
	return &anthropicMessages{t: t, model: name}
}

// anthropicFinalTypes are the error types of the Messages API's answers
// that waiting does not cure: an invalid request, a key refused, no
// credit, no permission, no such resource, a request over the size bound.
// Its 429 is rate_limit_error; a 429 of one of these types (as a gateway
// in front of the API may answer) fails the same way when sent again.
var anthropicFinalTypes = map[string]bool{
	"invalid_request_error": true, "authentication_error": true, "billing_error": true,
	"permission_error": true, "not_found_error": true, "request_too_large": true,
}

// anthropicNeverFits reports whether the body of a 429 says that a later
// attempt of the same request fails the same way: its error type is one
// of anthropicFinalTypes, or it reads so as an OpenAI body does
// (neverFits). A body that names no type leaves the status's verdict.
func anthropicNeverFits(raw []byte) bool {
	var body struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && anthropicFinalTypes[body.Error.Type] {
		return true
	}
	return neverFits(raw)
}

// anthropicBlock is a content block being streamed.
type anthropicBlock struct {
	Type      string
	ID        string
	Name      string
	Text      strings.Builder
	JSON      strings.Builder
	Thinking  strings.Builder
	Signature string
	Input     json.RawMessage // the input of a tool_use's content_block_start
	Start     json.RawMessage // the content_block of content_block_start
	Done      bool
}

type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// merge keeps the latest value of every field present.
func (u *anthropicUsage) merge(o *anthropicUsage) {
	if o == nil {
		return
	}
	if o.InputTokens != nil {
		u.InputTokens = o.InputTokens
	}
	if o.OutputTokens != nil {
		u.OutputTokens = o.OutputTokens
	}
	if o.CacheCreationInputTokens != nil {
		u.CacheCreationInputTokens = o.CacheCreationInputTokens
	}
	if o.CacheReadInputTokens != nil {
		u.CacheReadInputTokens = o.CacheReadInputTokens
	}
}

// Prepare checks and encodes req as one streaming Messages request.
func (c *anthropicMessages) Prepare(req Request) (Prepared, error) {
	return prepareBody(dialectAnthropic, req, c.body, c.send)
}

// Call prepares req and sends it.
func (c *anthropicMessages) Call(ctx context.Context, req Request, onDelta func(Delta)) (Result, error) {
	return callPrepared(ctx, c, req, onDelta)
}

// send posts an encoded Messages request and reads its stream.
func (c *anthropicMessages) send(ctx context.Context, body []byte, onDelta func(Delta)) (Result, error) {
	h := http.Header{}
	if c.t.key != "" {
		h.Set("X-Api-Key", c.t.key)
	}
	h.Set("Anthropic-Version", AnthropicVersion)
	live := newOutput(c.t.limits, onDelta)
	var (
		blocks     []*anthropicBlock
		stopReason string
		usage      anthropicUsage
		started    bool
	)
	block := func(i int) (*anthropicBlock, error) {
		if i < 0 || i >= len(blocks) || blocks[i] == nil {
			return nil, invalid(dialectAnthropic, fmt.Sprintf("event for unknown content block %d", i), nil)
		}
		return blocks[i], nil
	}
	done, err := c.t.stream(ctx, "/messages", h, body, func(_ string, data []byte) (bool, error) {
		var ev struct {
			Type    string `json:"type"`
			Message *struct {
				Usage *anthropicUsage `json:"usage"`
			} `json:"message"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
			Delta        *struct {
				Type        string  `json:"type"`
				Text        string  `json:"text"`
				PartialJSON string  `json:"partial_json"`
				Thinking    string  `json:"thinking"`
				Signature   string  `json:"signature"`
				StopReason  *string `json:"stop_reason"`
			} `json:"delta"`
			Usage *anthropicUsage `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, invalid(dialectAnthropic, "event", err)
		}
		switch ev.Type {
		case "message_start":
			started = true
			if ev.Message != nil {
				usage.merge(ev.Message.Usage)
			}
		case "content_block_start":
			var cb struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Text  string          `json:"text"`
				Input json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal(ev.ContentBlock, &cb); err != nil {
				return false, invalid(dialectAnthropic, "content_block_start", err)
			}
			if ev.Index != len(blocks) {
				return false, invalid(dialectAnthropic, fmt.Sprintf("content block %d started after %d blocks", ev.Index, len(blocks)), nil)
			}
			b := &anthropicBlock{Type: cb.Type, ID: cb.ID, Name: cb.Name, Input: cb.Input, Start: ev.ContentBlock}
			if cb.Type == "text" && cb.Text != "" {
				b.Text.WriteString(cb.Text)
				if err := live.text(cb.Text); err != nil {
					return false, err
				}
			}
			if err := live.charge(len(ev.ContentBlock) + blockOverhead); err != nil {
				return false, err
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			b, err := block(ev.Index)
			if err != nil {
				return false, err
			}
			if ev.Delta == nil {
				return false, invalid(dialectAnthropic, "content_block_delta without delta", nil)
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text.WriteString(ev.Delta.Text)
				return false, live.text(ev.Delta.Text)
			case "input_json_delta":
				b.JSON.WriteString(ev.Delta.PartialJSON)
				return false, live.charge(len(ev.Delta.PartialJSON))
			case "thinking_delta":
				b.Thinking.WriteString(ev.Delta.Thinking)
				return false, live.charge(len(ev.Delta.Thinking))
			case "signature_delta":
				b.Signature = ev.Delta.Signature
				return false, live.charge(len(ev.Delta.Signature))
			}
		case "content_block_stop":
			b, err := block(ev.Index)
			if err != nil {
				return false, err
			}
			b.Done = true
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != nil {
				stopReason = *ev.Delta.StopReason
			}
			usage.merge(ev.Usage)
		case "message_stop":
			return true, nil
		case "error":
			return false, c.t.streamError(ev.Error)
		}
		return false, nil
	})
	if err == nil && (!done || !started) {
		err = &ProviderError{Code: CodeStreamTruncated, Message: "anthropic messages: the stream ended before message_stop", Retryable: true}
	}
	if err != nil {
		if !started {
			return Result{}, err
		}
		// message_start counted the input; output counts only what
		// message_delta reported before the stream broke off.
		return Result{}, withPartial(err, Partial{StopReason: anthropicStop(stopReason), Usage: usage.usage()})
	}
	a := assembled{redact: c.t.redact}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			a.addText(b.Text.String())
		case "tool_use":
			// The input streams as input_json_delta fragments after a
			// start whose input is {}; a block that arrives whole has its
			// input in the start and no fragment, or only empty ones.
			args := b.JSON.String()
			if strings.TrimSpace(args) == "" && len(b.Input) > 0 && string(b.Input) != "null" {
				args = string(b.Input)
			}
			a.addToolUse(b.ID, b.Name, args)
		case "thinking":
			data, _ := json.Marshal(map[string]string{"type": "thinking", "thinking": b.Thinking.String(), "signature": b.Signature})
			a.addNative(NativeAnthropicMessages, data)
		default:
			// redacted_thinking and other blocks arrive whole at start.
			a.addNative(NativeAnthropicMessages, b.Start)
		}
	}
	stop := anthropicStop(stopReason)
	if stop == "" {
		stop = api.StopUnknown
	}
	return a.result(stop, usage.usage(), c.t.limits)
}

// anthropicStop maps a stop_reason; none is an empty stop reason.
func anthropicStop(reason string) StopReason {
	switch reason {
	case "":
		return ""
	case "end_turn":
		return api.StopEndTurn
	case "tool_use":
		return api.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return api.StopMaxTokens
	case "stop_sequence":
		return api.StopStopSequence
	case "refusal":
		return api.StopRefusal
	}
	return api.StopUnknown
}

// usage maps the usage reported so far; total input counts cached input
// too.
func (u anthropicUsage) usage() Usage {
	return counted(Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens,
		TotalInputTokens: sum(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)})
}

// body builds the request body.
func (c *anthropicMessages) body(req Request) (map[string]any, error) {
	opts, err := options(dialectAnthropic, req.Options, "thinking", "output_config", "temperature", "top_p", "top_k", "stop_sequences")
	if err != nil {
		return nil, err
	}
	if err := outputBound(dialectAnthropic, req); err != nil {
		return nil, err
	}
	if err := toolNames(dialectAnthropic, req.Tools, 0); err != nil {
		return nil, err
	}
	msgs, err := anthropicMessagesOf(req.Messages)
	if err != nil {
		return nil, err
	}
	maxTokens := int64(DefaultAnthropicMaxTokens)
	if req.MaxOutputTokens != nil {
		maxTokens = *req.MaxOutputTokens
	}
	body := map[string]any{
		"model":      c.model,
		"max_tokens": maxTokens,
		"messages":   msgs,
		"stream":     true,
	}
	if req.System != nil && *req.System != "" {
		body["system"] = *req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "input_schema": toolSchema(t.InputSchema)})
		}
		body["tools"] = tools
	}
	if hasResponseFormat(req.ResponseFormat) {
		_, schema, _, ok := jsonSchemaFormat(req.ResponseFormat)
		if !ok {
			return nil, fmt.Errorf("%w: anthropic takes only a json_schema response_format", ErrInvalidRequest)
		}
		oc := map[string]any{"format": map[string]any{"type": "json_schema", "schema": schema}}
		// output_config also carries options (effort): they join the format.
		if raw, ok := opts["output_config"]; ok {
			var more map[string]json.RawMessage
			if err := json.Unmarshal(raw, &more); err != nil || more == nil {
				return nil, fmt.Errorf("%w: anthropic option output_config is not an object", ErrInvalidRequest)
			}
			if _, ok := more["format"]; ok {
				return nil, fmt.Errorf("%w: anthropic output_config.format given both as an option and by response_format", ErrInvalidRequest)
			}
			for k, v := range more {
				oc[k] = v
			}
			delete(opts, "output_config")
		}
		body["output_config"] = oc
	}
	for k, v := range opts {
		body[k] = v
	}
	return body, nil
}

// anthropicMessagesOf maps Brain messages to Messages turns. Developer
// messages join the user side; consecutive turns of one role are merged.
func anthropicMessagesOf(msgs []api.Message) ([]map[string]any, error) {
	var out []map[string]any
	for _, m := range msgs {
		role := "user"
		switch m.Role {
		case api.RoleAssistant:
			role = "assistant"
		case api.RoleUser, api.RoleDeveloper:
		default:
			return nil, fmt.Errorf("%w: role %q", ErrInvalidRequest, m.Role)
		}
		var content []any
		for _, b := range m.Content {
			switch b.Type {
			case api.BlockText:
				// The API refuses empty text, and a message whose text is
				// all whitespace; the model's own whitespace (before a
				// tool call, say) is left out rather than refused.
				if b.Text != "" && (role != "assistant" || strings.TrimSpace(b.Text) != "") {
					content = append(content, map[string]any{"type": "text", "text": b.Text})
				}
			case api.BlockImage:
				content = append(content, map[string]any{"type": "image", "source": map[string]string{"type": "url", "url": b.URL}})
			case api.BlockFile:
				content = append(content, map[string]any{"type": "document", "source": map[string]string{"type": "url", "url": b.URL}})
			case api.BlockToolUse:
				if role != "assistant" {
					return nil, fmt.Errorf("%w: tool_use in a %s message", ErrInvalidRequest, m.Role)
				}
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage(`{}`)
				}
				content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input})
			case api.BlockToolResult:
				text := toolResultText(b.Content)
				failed := b.IsError != nil && *b.IsError
				if failed && len(b.Media) == 0 && strings.TrimSpace(text) == "" {
					// The API refuses a failed result without content:
					// one with no text goes as its JSON text.
					text = string(bytes.TrimSpace(b.Content))
					if text == "" {
						text = "null"
					}
				}
				tr := map[string]any{"type": "tool_result", "tool_use_id": b.ToolUseID, "content": text}
				if len(b.Media) > 0 {
					parts := []map[string]any{}
					if text != "" {
						parts = append(parts, map[string]any{"type": "text", "text": text})
					}
					for _, md := range b.Media {
						kind := "image"
						if md.Type != api.BlockImage {
							kind = "document"
						}
						parts = append(parts, map[string]any{"type": kind, "source": map[string]string{"type": "url", "url": md.URL}})
					}
					tr["content"] = parts
				}
				if failed {
					tr["is_error"] = true
				}
				content = append(content, tr)
			case api.BlockNative:
				if b.Format == NativeAnthropicMessages && len(b.Data) > 0 {
					content = append(content, b.Data)
				}
			}
		}
		if len(content) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1]["role"] == role {
			out[n-1]["content"] = append(out[n-1]["content"].([]any), content...)
			continue
		}
		out = append(out, map[string]any{"role": role, "content": content})
	}
	if out == nil {
		out = []map[string]any{}
	}
	// The tool_result blocks of a user turn come first: the API refuses a
	// turn after tool calls that begins with anything else (a developer
	// note merged in ahead of the results, say).
	for _, m := range out {
		if m["role"] == "user" {
			m["content"] = toolResultsFirst(m["content"].([]any))
		}
	}
	return out, nil
}

// toolResultsFirst orders a user turn's tool_result blocks before its other
// blocks, each kind in its own order.
func toolResultsFirst(content []any) []any {
	isResult := func(b any) bool {
		m, ok := b.(map[string]any)
		return ok && m["type"] == "tool_result"
	}
	ordered := make([]any, 0, len(content))
	for _, b := range content {
		if isResult(b) {
			ordered = append(ordered, b)
		}
	}
	for _, b := range content {
		if !isResult(b) {
			ordered = append(ordered, b)
		}
	}
	return ordered
}
