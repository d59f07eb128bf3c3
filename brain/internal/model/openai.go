package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/brain-in-go/brain/brain/api"
)

// openAIResponses is the client of the OpenAI Responses API
// (POST {base}/responses), stateless: every request carries the whole
// conversation with store:false, and reasoning items come back with their
// encrypted content to be replayed as native blocks.
type openAIResponses struct {
	t     transport
	model string
}

const dialectResponses = "openai responses"

// Prepare checks and encodes req: one streaming Responses request, or,
// with the option operation "compact", one compaction request.
func (c *openAIResponses) Prepare(req Request) (Prepared, error) {
	compact, err := isCompact(req.Options)
	if err != nil {
		return nil, err
	}
	if compact {
		return prepareBody(dialectResponses, req, c.compactBody, func(ctx context.Context, body []byte, _ func(Delta)) (Result, error) {
			return c.compact(ctx, body)
		})
	}
	return prepareBody(dialectResponses, req, c.body, c.send)
}

// Call prepares req and sends it.
func (c *openAIResponses) Call(ctx context.Context, req Request, onDelta func(Delta)) (Result, error) {
	return callPrepared(ctx, c, req, onDelta)
}

// header is the credential of every request.
func (c *openAIResponses) header() http.Header {
	h := http.Header{}
	if c.t.key != "" {
		h.Set("Authorization", "Bearer "+c.t.key)
	}
	return h
}

// send posts an encoded Responses request and reads its stream.
func (c *openAIResponses) send(ctx context.Context, body []byte, onDelta func(Delta)) (Result, error) {
	h := c.header()
	live := newOutput(c.t.limits, onDelta)
	var final *responsesObject
	// seen is the latest response object the stream carried; its usage is
	// what a failed call records.
	var seen *responsesObject
	answered := false
	// The terminal event repeats the whole output, so its frame may be as
	// large as the output itself.
	t := c.t
	if t.limits.MaxFrameBytes > 0 && t.limits.MaxOutputBytes > 0 {
		t.limits.MaxFrameBytes += 2 * t.limits.MaxOutputBytes
	} else {
		t.limits.MaxFrameBytes = 0
	}
	done, err := t.stream(ctx, "/responses", h, body, func(_ string, data []byte) (bool, error) {
		var ev struct {
			Type     string           `json:"type"`
			Delta    string           `json:"delta"`
			Response *responsesObject `json:"response"`
			Code     json.RawMessage  `json:"code"`
			Message  string           `json:"message"`
			Error    json.RawMessage  `json:"error"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, invalid(dialectResponses, "event", err)
		}
		answered = true
		if ev.Response != nil {
			seen = ev.Response
		}
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			return false, live.text(ev.Delta)
		case "response.function_call_arguments.delta":
			return false, live.charge(len(ev.Delta))
		case "response.completed", "response.incomplete":
			if ev.Response == nil {
				return false, invalid(dialectResponses, ev.Type+" without response", nil)
			}
			final = ev.Response
			return true, nil
		case "response.failed":
			code, msg, status := "response_failed", "the response failed", 0
			if ev.Response != nil && len(ev.Response.Error) > 0 {
				if c2, m := parseErrorObject(ev.Response.Error); c2 != "" || m != "" {
					code, msg = orDefault(c2, code), orDefault(m, msg)
				}
				status = errorStatus(ev.Response.Error)
			}
			return false, t.failure(code, msg, retryableError(code, status))
		case "error":
			// The reference documents the fields flat; the live API nests
			// them in an "error" object. Either may be present. A numeric
			// code (a local server's) is the HTTP status it stands for.
			code, msg, status := "", ev.Message, statusCode(ev.Code)
			if json.Unmarshal(ev.Code, &code) != nil {
				code = ""
			}
			if len(ev.Error) > 0 && string(ev.Error) != "null" {
				c2, m := parseErrorObject(ev.Error)
				code, msg = orDefault(code, c2), orDefault(msg, m)
				if status == 0 {
					status = errorStatus(ev.Error)
				}
			}
			code = orDefault(code, "stream_error")
			return false, t.failure(code, msg, retryableError(code, status))
		}
		return false, nil
	})
	if err == nil && (!done || final == nil) {
		err = &ProviderError{Code: CodeStreamTruncated, Message: "openai responses: the stream ended before response.completed", Retryable: true}
	}
	if err != nil {
		if !answered {
			return Result{}, err
		}
		var p Partial
		if seen != nil && seen.Usage != nil {
			// A failed response reports the usage it incurred in full.
			p.Usage, p.UsageComplete = seen.usage(), seen.Status == "failed"
		}
		return Result{}, withPartial(err, p)
	}
	res, err := final.result(c.t)
	var pe *PartialError
	if err != nil && !errors.As(err, &pe) {
		err = withPartial(err, Partial{StopReason: final.stopReason(), Usage: final.usage(), UsageComplete: final.Usage != nil})
	}
	return res, err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// body builds the request body.
func (c *openAIResponses) body(req Request) (map[string]any, error) {
	opts, err := options(dialectResponses, req.Options, "operation", "reasoning", "temperature", "top_p")
	if err != nil {
		return nil, err
	}
	delete(opts, "operation") // only "compact" selects another request
	if err := outputBound(dialectResponses, req); err != nil {
		return nil, err
	}
	if err := toolNames(dialectResponses, req.Tools, 64); err != nil {
		return nil, err
	}
	input, err := responsesInput(req.Messages)
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"model":  c.model,
		"input":  input,
		"store":  false,
		"stream": true,
	}
	if reasons(c.model) {
		body["include"] = []string{"reasoning.encrypted_content"}
	}
	if req.System != nil && *req.System != "" {
		body["instructions"] = *req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]map[string]any, 0, len(req.Tools))
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{
				"type": "function", "name": t.Name, "description": t.Description,
				"parameters": toolSchema(t.InputSchema), "strict": false,
			})
		}
		body["tools"] = tools
	}
	if req.MaxOutputTokens != nil {
		body["max_output_tokens"] = *req.MaxOutputTokens
	}
	if hasResponseFormat(req.ResponseFormat) {
		format := req.ResponseFormat
		if name, schema, strict, ok := jsonSchemaFormat(req.ResponseFormat); ok {
			f := map[string]any{"type": "json_schema", "name": orDefault(name, "response"), "schema": schema}
			if strict != nil {
				f["strict"] = *strict
			}
			b, _ := json.Marshal(f)
			format = b
		}
		body["text"] = map[string]json.RawMessage{"format": format}
	}
	for k, v := range opts {
		body[k] = v
	}
	return body, nil
}

// nonReasoning are the prefixes of the model families that do not reason
// and for which OpenAI refuses include ["reasoning.encrypted_content"]
// ("Encrypted content is not supported with this model").
var nonReasoning = []string{"gpt-4", "gpt-3.5", "chatgpt-", "gpt-5-chat"}

// reasons reports whether model may reason, so that its reasoning is asked
// for encrypted, to be replayed in a stateless conversation. A model of
// an unknown family is taken to reason. A gateway's namespace
// ("openai/gpt-4.1") and a fine-tune's prefix ("ft:gpt-4o-mini-...:org::id")
// leave the family of the base model.
func reasons(model string) bool {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	model = strings.TrimPrefix(model, "ft:")
	for _, p := range nonReasoning {
		if strings.HasPrefix(model, p) {
			return false
		}
	}
	return true
}

// responsesInput maps Brain messages to Responses input items.
func responsesInput(msgs []api.Message) ([]any, error) {
	items := []any{}
	for _, m := range msgs {
		switch m.Role {
		case api.RoleAssistant:
			var text strings.Builder
			flush := func() {
				if text.Len() > 0 {
					items = append(items, map[string]any{"role": "assistant", "content": text.String()})
					text.Reset()
				}
			}
			for _, b := range m.Content {
				switch b.Type {
				case api.BlockText:
					text.WriteString(b.Text)
				case api.BlockToolUse:
					flush()
					args := string(b.Input)
					if args == "" {
						args = "{}"
					}
					items = append(items, map[string]any{"type": "function_call", "call_id": b.ID, "name": b.Name, "arguments": args})
				case api.BlockNative:
					if replayable(b) {
						flush()
						items = append(items, replayItem(b.Data))
					}
				}
			}
			flush()
		case api.RoleUser, api.RoleDeveloper:
			var parts []map[string]any
			flush := func() {
				if len(parts) > 0 {
					items = append(items, map[string]any{"role": m.Role, "content": parts})
					parts = nil
				}
			}
			for _, b := range m.Content {
				switch b.Type {
				case api.BlockText:
					parts = append(parts, map[string]any{"type": "input_text", "text": b.Text})
				case api.BlockImage:
					parts = append(parts, map[string]any{"type": "input_image", "image_url": b.URL})
				case api.BlockFile:
					parts = append(parts, map[string]any{"type": "input_file", "file_url": b.URL})
				case api.BlockToolResult:
					flush()
					var output any = toolResultText(b.Content)
					if len(b.Media) > 0 {
						out := []map[string]any{{"type": "input_text", "text": toolResultText(b.Content)}}
						for _, md := range b.Media {
							if md.Type == api.BlockImage {
								out = append(out, map[string]any{"type": "input_image", "image_url": md.URL})
							} else {
								out = append(out, map[string]any{"type": "input_file", "file_url": md.URL})
							}
						}
						output = out
					}
					items = append(items, map[string]any{"type": "function_call_output", "call_id": b.ToolUseID, "output": output})
				case api.BlockNative:
					if replayable(b) {
						flush()
						items = append(items, replayItem(b.Data))
					}
				case api.BlockToolUse:
					return nil, fmt.Errorf("%w: tool_use in a %s message", ErrInvalidRequest, m.Role)
				}
			}
			flush()
		default:
			return nil, fmt.Errorf("%w: role %q", ErrInvalidRequest, m.Role)
		}
	}
	return items, nil
}

// replayable reports whether a native block can be sent back to the
// Responses API: its own format, and for reasoning items only with their
// encrypted content (a stateless request cannot refer to a stored item).
func replayable(b api.ContentBlock) bool {
	if b.Format != NativeOpenAIResponses || len(b.Data) == 0 {
		return false
	}
	var item struct {
		Type             string `json:"type"`
		EncryptedContent string `json:"encrypted_content"`
	}
	if json.Unmarshal(b.Data, &item) != nil {
		return false
	}
	return item.Type != "reasoning" || item.EncryptedContent != ""
}

// replayItem is a native item as a stateless request sends it back: a
// reasoning item without its id, like the message and function calls that
// followed it (which go back as plain input, without theirs). An item that
// names its id is paired by the API with a following item naming its own,
// and refused without one.
func replayItem(data json.RawMessage) json.RawMessage {
	var item map[string]json.RawMessage
	if json.Unmarshal(data, &item) != nil || string(item["type"]) != `"reasoning"` {
		return data
	}
	if _, ok := item["id"]; !ok {
		return data
	}
	delete(item, "id")
	out, err := json.Marshal(item)
	if err != nil {
		return data
	}
	return out
}

// responsesObject is the response of a terminal event.
type responsesObject struct {
	Status            string            `json:"status"`
	Output            []json.RawMessage `json:"output"`
	Error             json.RawMessage   `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Usage *struct {
		InputTokens        *int64 `json:"input_tokens"`
		InputTokensDetails *struct {
			CachedTokens *int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        *int64 `json:"output_tokens"`
		OutputTokensDetails *struct {
			ReasoningTokens *int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func (r *responsesObject) result(t transport) (Result, error) {
	a := assembled{redact: t.redact}
	for _, raw := range r.Output {
		if a.full(t.limits) {
			break // result reports it
		}
		var item struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			return Result{}, invalid(dialectResponses, "output item", err)
		}
		switch item.Type {
		case "message":
			for _, p := range item.Content {
				switch p.Type {
				case "output_text":
					a.addText(p.Text)
				case "refusal":
					a.refused = true
					a.addText(p.Refusal)
				}
			}
		case "function_call":
			a.addToolUse(item.CallID, item.Name, item.Arguments)
		default:
			// reasoning and any other item: kept verbatim.
			a.addNative(NativeOpenAIResponses, raw)
		}
	}
	stop := r.stopReason()
	if stop == api.StopEndTurn && a.refused {
		stop = api.StopRefusal
	}
	return a.result(stop, r.usage(), t.limits)
}

// stopReason maps the response's status; a refusal in a completed
// response is decided by the caller, which sees its content.
func (r *responsesObject) stopReason() StopReason {
	switch r.Status {
	case "completed":
		return api.StopEndTurn
	case "incomplete":
		if r.IncompleteDetails != nil {
			switch r.IncompleteDetails.Reason {
			case "max_output_tokens":
				return api.StopMaxTokens
			case "content_filter":
				return api.StopRefusal
			}
		}
	}
	return api.StopUnknown
}

// usage maps the response's usage (zero when it reports none).
func (r *responsesObject) usage() Usage {
	var u Usage
	if r.Usage == nil {
		return u
	}
	u.TotalInputTokens = r.Usage.InputTokens
	u.OutputTokens = r.Usage.OutputTokens
	u.InputTokens = r.Usage.InputTokens
	if d := r.Usage.InputTokensDetails; d != nil && d.CachedTokens != nil {
		u.CacheReadInputTokens = d.CachedTokens
		u.InputTokens = uncached(r.Usage.InputTokens, d.CachedTokens)
	}
	if d := r.Usage.OutputTokensDetails; d != nil {
		u.ReasoningTokens = d.ReasoningTokens
	}
	return counted(u)
}

// OperationCompact is the Responses option operation that compacts the
// conversation (POST {base}/responses/compact) instead of answering it.
const OperationCompact = "compact"

// isCompact reads the option operation: absent or "create" answers the
// conversation, "compact" compacts it.
func isCompact(raw json.RawMessage) (bool, error) {
	opts, err := options(dialectResponses, raw, "operation", "reasoning", "temperature", "top_p")
	if err != nil {
		return false, err
	}
	op, ok := opts["operation"]
	if !ok {
		return false, nil
	}
	var s string
	if json.Unmarshal(op, &s) != nil || (s != OperationCompact && s != "create") {
		return false, fmt.Errorf("%w: %s option operation %s: want %q or \"create\"", ErrInvalidRequest, dialectResponses, op, OperationCompact)
	}
	return s == OperationCompact, nil
}

// compactBody builds the body of a compaction request: the model, input
// and instructions only. Tools and the response format are left out;
// sampling options, reasoning and an output bound are refused.
func (c *openAIResponses) compactBody(req Request) (map[string]any, error) {
	opts, err := options(dialectResponses, req.Options, "operation", "reasoning", "temperature", "top_p")
	if err != nil {
		return nil, err
	}
	for k := range opts {
		if k != "operation" {
			return nil, fmt.Errorf("%w: %s compact does not take the option %q", ErrInvalidRequest, dialectResponses, k)
		}
	}
	if req.MaxOutputTokens != nil {
		return nil, fmt.Errorf("%w: %s compact does not take max_output_tokens", ErrInvalidRequest, dialectResponses)
	}
	input, err := responsesInput(req.Messages)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"model": c.model, "input": input}
	if req.System != nil && *req.System != "" {
		body["instructions"] = *req.System
	}
	return body, nil
}

// compact posts an encoded compaction body (see compactBody) to
// {base}/responses/compact, which answers it in one JSON object whose
// output items (the compacted conversation, an encrypted compaction item
// among them) replace the input. The result is one assistant message
// holding every output item verbatim as a native block, replayed as is by
// later requests.
func (c *openAIResponses) compact(ctx context.Context, body []byte) (Result, error) {
	var answer responsesObject
	if err := c.t.post(ctx, "/responses/compact", c.header(), body, &answer); err != nil {
		return Result{}, err
	}
	a := assembled{redact: c.t.redact}
	for _, raw := range answer.Output {
		if a.full(c.t.limits) {
			break // result reports it
		}
		var item struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &item) != nil || item.Type == "" {
			return Result{}, withPartial(invalid(dialectResponses, "compacted output item without a type", nil),
				Partial{Usage: answer.usage(), UsageComplete: answer.Usage != nil})
		}
		a.addNative(NativeOpenAIResponses, raw)
	}
	return a.result(api.StopEndTurn, answer.usage(), c.t.limits)
}
