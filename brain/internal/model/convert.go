package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
)

// Native block formats: provider blocks kept verbatim in the transcript
// (reasoning, thinking) and sent back only to the dialect they came from.
const (
	NativeOpenAIResponses   = "openai.responses.v1"
	NativeAnthropicMessages = "anthropic.messages.v1"
)

// toolResultText is the text form of a tool_result's content: a JSON string
// as its value, anything else as its JSON text.
func toolResultText(content json.RawMessage) string {
	c := bytes.TrimSpace(content)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		if s, ok := plainString(c); ok {
			return s
		}
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
	}
	return string(c)
}

// plainString answers the value of a JSON string that holds no escape, no
// control character and only valid UTF-8, which is its text between the
// quotes, without decoding it; ok is false for any other input.
func plainString(c []byte) (string, bool) {
	if len(c) < 2 || c[0] != '"' || c[len(c)-1] != '"' {
		return "", false
	}
	inner := c[1 : len(c)-1]
	for _, b := range inner {
		if b == '"' || b == '\\' || b < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// options decodes req.Options and refuses keys the dialect does not allow.
func options(dialect string, raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var opts map[string]json.RawMessage
	if err := json.Unmarshal(raw, &opts); err != nil {
		return nil, fmt.Errorf("%w: %s options: %v", ErrInvalidRequest, dialect, err)
	}
	for k := range opts {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s does not take the option %q (allowed: %s)", ErrInvalidRequest, dialect, k, strings.Join(allowed, ", "))
		}
	}
	return opts, nil
}

// outputBound checks max_output_tokens: when set, at least 1, as every
// dialect requires.
func outputBound(dialect string, req Request) error {
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens < 1 {
		return fmt.Errorf("%w: %s: max_output_tokens %d is below 1", ErrInvalidRequest, dialect, *req.MaxOutputTokens)
	}
	return nil
}

// toolNames refuses a tool name the dialect's API refuses: OpenAI's and
// Anthropic's take letters, digits, '_' and '-' only (a Brain identifier
// may also hold '.' and ':'), and OpenAI at most 64 of them (max; 0 sets
// no bound of its own).
func toolNames(dialect string, tools []api.ToolDefinition, max int) error {
	for _, t := range tools {
		ok := t.Name != "" && (max == 0 || len(t.Name) <= max)
		for i := 0; ok && i < len(t.Name); i++ {
			c := t.Name[i]
			ok = c == '_' || c == '-' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		}
		if !ok {
			limit := ""
			if max > 0 {
				limit = fmt.Sprintf(", at most %d", max)
			}
			return fmt.Errorf("%w: %s takes tool names of letters, digits, '_' and '-'%s: %q", ErrInvalidRequest, dialect, limit, t.Name)
		}
	}
	return nil
}

// jsonSchemaFormat reads a response_format that asks for a JSON schema, in
// either the flat form {"type":"json_schema","name","schema","strict"} or the
// Chat Completions form {"type":"json_schema","json_schema":{...}}. ok is
// false for any other format (e.g. {"type":"json_object"}).
func jsonSchemaFormat(rf json.RawMessage) (name string, schema json.RawMessage, strict *bool, ok bool) {
	var f struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Schema     json.RawMessage `json:"schema"`
		Strict     *bool           `json:"strict"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(rf, &f) != nil || f.Type != "json_schema" {
		return "", nil, nil, false
	}
	if f.JSONSchema != nil {
		return f.JSONSchema.Name, f.JSONSchema.Schema, f.JSONSchema.Strict, true
	}
	return f.Name, f.Schema, f.Strict, true
}

func hasResponseFormat(rf json.RawMessage) bool {
	rf = bytes.TrimSpace(rf)
	return len(rf) > 0 && string(rf) != "null"
}

// assembled is a response being built: blocks in order, the first invalid
// tool input, and whether the provider refused.
type assembled struct {
	// redact removes the API key from what an error quotes of the answer
	// (a tool call's id or name, which a provider may echo the key in);
	// nil quotes it as it is.
	redact     func(string) string
	blocks     []api.ContentBlock
	badTool    error
	toolCalls  int
	refused    bool
	outputSize int
}

// blockOverhead is what a content block adds to the recorded message
// beyond its content (its type, format, id and name fields, the JSON
// around them), at most: every block counts it toward MaxOutputBytes, so
// that an answer of many small blocks is bounded as the message it makes.
const blockOverhead = 64

func (a *assembled) addText(s string) {
	if s == "" {
		return
	}
	a.outputSize += len(s)
	if n := len(a.blocks); n > 0 && a.blocks[n-1].Type == api.BlockText {
		a.blocks[n-1].Text += s
		return
	}
	a.outputSize += blockOverhead
	a.blocks = append(a.blocks, api.TextBlock(s))
}

func (a *assembled) addToolUse(id, name, args string) {
	a.toolCalls++
	a.outputSize += len(args) + len(name) + len(id) + blockOverhead
	if strings.TrimSpace(name) == "" {
		if a.badTool == nil {
			a.badTool = namesNoTool(a.quoted(id))
		}
		return
	}
	input, err := toolInput(a.quoted(name), args)
	if err != nil {
		if a.badTool == nil {
			a.badTool = err
		}
		return
	}
	a.blocks = append(a.blocks, api.ContentBlock{Type: api.BlockToolUse, ID: id, Name: name, Input: input})
}

// quoted is s as an error of this answer may quote it.
func (a *assembled) quoted(s string) string {
	if a.redact == nil {
		return s
	}
	return a.redact(s)
}

func (a *assembled) addNative(format string, data json.RawMessage) {
	a.outputSize += len(data) + blockOverhead
	a.blocks = append(a.blocks, api.ContentBlock{Type: api.BlockNative, Format: format, Data: data})
}

// result applies the rules every dialect shares: the output bound, tool
// calls in an unfinished response (model_output_incomplete), invalid tool
// input (model_output_invalid), and tool_use as the stop reason of a
// finished response that calls tools.
//
// A failure carries the stop reason and the usage as complete (see
// PartialError): the provider answered in full.
func (a *assembled) result(stop StopReason, usage Usage, limits Limits) (Result, error) {
	fail := func(err error) (Result, error) {
		p := Partial{StopReason: stop, Usage: usage, UsageComplete: true}
		var oe *OutputError
		if errors.As(err, &oe) {
			p.StopReason = oe.StopReason
		}
		return Result{}, withPartial(err, p)
	}
	if a.full(limits) {
		return fail(&ProviderError{Code: CodeResponseTooLarge, Message: fmt.Sprintf("model output exceeds %d bytes", limits.MaxOutputBytes)})
	}
	switch stop {
	case api.StopMaxTokens, api.StopRefusal, api.StopUnknown:
		if a.toolCalls > 0 {
			return fail(incomplete(stop, a.toolCalls))
		}
	default:
		if a.badTool != nil {
			return fail(a.badTool)
		}
		if a.toolCalls > 0 {
			stop = api.StopToolUse
		}
	}
	content := a.blocks
	if content == nil {
		content = []api.ContentBlock{}
	}
	return Result{Message: api.Message{Role: api.RoleAssistant, Content: content}, StopReason: stop, Usage: usage}, nil
}

// full reports whether the message exceeds MaxOutputBytes: no block added
// after can make it fit.
func (a *assembled) full(limits Limits) bool {
	return limits.MaxOutputBytes > 0 && int64(a.outputSize) > limits.MaxOutputBytes
}
