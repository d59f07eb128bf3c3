package model

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// This file holds fake providers: httptest servers that record every
// request and answer with streams shaped like the providers' documented
// ones (event names, field names, nesting, terminal events).

// recorded is one request a fake received.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// fake is a provider server whose answer the test sets per call.
type fake struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []recorded
	reply func(w http.ResponseWriter, r *recorded)
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
		_ = json.Unmarshal(raw, &rec.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		reply := f.reply
		f.mu.Unlock()
		if reply == nil {
			http.Error(w, "no reply set", http.StatusTeapot)
			return
		}
		reply(w, &rec)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) set(reply func(w http.ResponseWriter, r *recorded)) {
	f.mu.Lock()
	f.reply = reply
	f.mu.Unlock()
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fake) last(t *testing.T) recorded {
	t.Helper()
	r := f.requests()
	if len(r) == 0 {
		t.Fatal("the fake received no request")
	}
	return r[len(r)-1]
}

// sse answers body as an event stream.
func sse(body string) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, _ *recorded) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body)
	}
}

// status answers a JSON error body.
func status(code int, body string) func(http.ResponseWriter, *recorded) {
	return func(w http.ResponseWriter, _ *recorded) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// event renders one server-sent event; an empty name writes data only.
func event(name string, data any) string {
	d, ok := data.(string)
	if !ok {
		d = mustJSON(data)
	}
	if name == "" {
		return "data: " + d + "\n\n"
	}
	return "event: " + name + "\ndata: " + d + "\n\n"
}

// turn is one model answer, rendered by each dialect in its own wire form.
type turn struct {
	text   []string // text deltas
	calls  []fakeCall
	stop   api.StopReason
	in     int64 // all input tokens, cached included
	cached int64
	out    int64
}

type fakeCall struct {
	id, name string
	args     []string // argument fragments
}

func (c fakeCall) joined() string { return strings.Join(c.args, "") }

// dialect describes how one provider speaks.
type dialect struct {
	provider string
	model    string
	path     string
	render   func(turn) string
	// errorBody is the provider's error answer for a status.
	errorBody func(code, message string) string
	// streamError is a stream that starts and then reports an error.
	streamError func(code, message string) string
	// truncated is a stream that stops mid-way.
	truncated func() string
	// checkAuth checks the credential and protocol headers.
	checkAuth func(t *testing.T, h http.Header, key string)
}

var dialects = []dialect{responsesDialect, chatDialect, anthropicDialect}

// ----- OpenAI Responses -----

var responsesDialect = dialect{
	provider: ProviderOpenAI, model: "gpt-test", path: "/v1/responses",
	render: renderResponses,
	errorBody: func(code, message string) string {
		return mustJSON(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": code}})
	},
	streamError: func(code, message string) string {
		return event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
			event("error", map[string]any{"type": "error", "code": code, "message": message, "param": nil, "sequence_number": 1})
	},
	truncated: func() string {
		return event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
			event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hel", "logprobs": []any{}})
	},
	checkAuth: func(t *testing.T, h http.Header, key string) {
		if got := h.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization = %q", got)
		}
	},
}

func responsesEnvelope(status string, output []any, incomplete any, usage any) map[string]any {
	if output == nil {
		output = []any{}
	}
	return map[string]any{
		"id": "resp_67ccd2bed1ec8190b14f964abc054267", "object": "response", "created_at": 1741476542,
		"status": status, "error": nil, "incomplete_details": incomplete, "instructions": nil,
		"max_output_tokens": nil, "model": "gpt-4.1-2025-04-14", "output": output,
		"parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": false,
		"temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled",
		"usage": usage, "user": nil, "metadata": map[string]any{},
	}
}

func renderResponses(tr turn) string {
	var b strings.Builder
	seq := 0
	emit := func(name string, data map[string]any) {
		data["type"] = name
		data["sequence_number"] = seq
		seq++
		b.WriteString(event(name, data))
	}
	emit("response.created", map[string]any{"response": responsesEnvelope("in_progress", nil, nil, nil)})
	emit("response.in_progress", map[string]any{"response": responsesEnvelope("in_progress", nil, nil, nil)})
	var output []any
	idx := 0
	if len(tr.text) > 0 {
		full := strings.Join(tr.text, "")
		partType, deltaEv, doneEv, field := "output_text", "response.output_text.delta", "response.output_text.done", "text"
		if tr.stop == api.StopRefusal {
			partType, deltaEv, doneEv, field = "refusal", "response.refusal.delta", "response.refusal.done", "refusal"
		}
		emit("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		emptyPart := map[string]any{"type": partType, field: ""}
		if partType == "output_text" {
			emptyPart["annotations"] = []any{}
		}
		emit("response.content_part.added", map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "part": emptyPart})
		for _, d := range tr.text {
			ev := map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "delta": d}
			if partType == "output_text" {
				ev["logprobs"] = []any{}
			}
			emit(deltaEv, ev)
		}
		done := map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, field: full}
		emit(doneEv, done)
		part := map[string]any{"type": partType, field: full}
		if partType == "output_text" {
			part["annotations"] = []any{}
			part["logprobs"] = []any{}
		}
		emit("response.content_part.done", map[string]any{"item_id": "msg_1", "output_index": idx, "content_index": 0, "part": part})
		item := map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		emit("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for i, c := range tr.calls {
		itemID := fmt.Sprintf("fc_%d", i+1)
		emit("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"id": itemID, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": c.id, "name": c.name}})
		for _, a := range c.args {
			emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": idx, "delta": a})
		}
		emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": idx, "arguments": c.joined()})
		item := map[string]any{"id": itemID, "type": "function_call", "status": "completed", "arguments": c.joined(), "call_id": c.id, "name": c.name}
		emit("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	usage := map[string]any{
		"input_tokens": tr.in, "input_tokens_details": map[string]any{"cached_tokens": tr.cached},
		"output_tokens": tr.out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": tr.in + tr.out,
	}
	switch tr.stop {
	case api.StopMaxTokens:
		emit("response.incomplete", map[string]any{"response": responsesEnvelope("incomplete", output, map[string]any{"reason": "max_output_tokens"}, usage)})
	default:
		emit("response.completed", map[string]any{"response": responsesEnvelope("completed", output, nil, usage)})
	}
	return b.String()
}

// ----- OpenAI Chat Completions -----

var chatDialect = dialect{
	provider: ProviderOpenAIChat, model: "llama-test", path: "/v1/chat/completions",
	render: renderChat,
	errorBody: func(code, message string) string {
		return mustJSON(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "param": nil, "code": code}})
	},
	streamError: func(code, message string) string {
		return chatChunk(map[string]any{"role": "assistant", "content": ""}, nil, nil) +
			event("", map[string]any{"error": map[string]any{"message": message, "type": code, "param": nil, "code": code}})
	},
	truncated: func() string {
		return chatChunk(map[string]any{"role": "assistant", "content": ""}, nil, nil) +
			chatChunk(map[string]any{"content": "Hel"}, nil, nil)
	},
	checkAuth: func(t *testing.T, h http.Header, key string) {
		if got := h.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization = %q", got)
		}
	},
}

// chatChunk renders one chat.completion.chunk; finish nil is JSON null.
func chatChunk(delta map[string]any, finish *string, usage any) string {
	c := map[string]any{
		"id": "chatcmpl-7QyqpwdfhqwajicIEznoc6Q47XAyW", "object": "chat.completion.chunk", "created": 1694268190,
		"model": "llama-test", "system_fingerprint": "fp_44709d6fcb",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	if delta == nil {
		c["choices"] = []any{}
		c["usage"] = usage
	}
	return event("", c)
}

func renderChat(tr turn) string {
	var b strings.Builder
	b.WriteString(chatChunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil, nil))
	for _, d := range tr.text {
		if tr.stop == api.StopRefusal {
			b.WriteString(chatChunk(map[string]any{"refusal": d}, nil, nil))
		} else {
			b.WriteString(chatChunk(map[string]any{"content": d}, nil, nil))
		}
	}
	for i, c := range tr.calls {
		b.WriteString(chatChunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": ""}}}}, nil, nil))
		for _, a := range c.args {
			b.WriteString(chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil, nil))
		}
	}
	finish := map[api.StopReason]string{api.StopEndTurn: "stop", api.StopToolUse: "tool_calls", api.StopMaxTokens: "length",
		api.StopRefusal: "stop", api.StopStopSequence: "stop", api.StopUnknown: "content_filter"}[tr.stop]
	b.WriteString(chatChunk(map[string]any{}, &finish, nil))
	b.WriteString(chatChunk(nil, nil, map[string]any{
		"prompt_tokens": tr.in, "completion_tokens": tr.out, "total_tokens": tr.in + tr.out,
		"prompt_tokens_details": map[string]any{"cached_tokens": tr.cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}))
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// ----- Anthropic Messages -----

var anthropicDialect = dialect{
	provider: ProviderAnthropic, model: "claude-test", path: "/v1/messages",
	render: renderAnthropic,
	errorBody: func(code, message string) string {
		return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": code, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	},
	streamError: func(code, message string) string {
		return anthropicStart(10, 0) + event("error", map[string]any{"type": "error", "error": map[string]any{"type": code, "message": message}})
	},
	truncated: func() string {
		return anthropicStart(10, 0) +
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}) +
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "Hel"}})
	},
	checkAuth: func(t *testing.T, h http.Header, key string) {
		if got := h.Get("X-Api-Key"); got != key {
			t.Errorf("x-api-key = %q", got)
		}
		if got := h.Get("Anthropic-Version"); got != "2023-06-01" {
			t.Errorf("anthropic-version = %q", got)
		}
		if h.Get("Authorization") != "" {
			t.Error("anthropic request carries an Authorization header")
		}
	},
}

func anthropicStart(uncached, cached int64) string {
	return event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_014p7gG3wDgGV9EUtLvnow3U", "type": "message", "role": "assistant", "content": []any{},
		"model": "claude-test", "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": uncached, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached, "output_tokens": 1},
	}})
}

func renderAnthropic(tr turn) string {
	var b strings.Builder
	b.WriteString(anthropicStart(tr.in-tr.cached, tr.cached))
	idx := 0
	if len(tr.text) > 0 {
		b.WriteString(event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}}))
		b.WriteString(event("ping", map[string]any{"type": "ping"}))
		for _, d := range tr.text {
			b.WriteString(event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": d}}))
		}
		b.WriteString(event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}))
		idx++
	}
	for _, c := range tr.calls {
		b.WriteString(event("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}}))
		b.WriteString(event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}}))
		for _, a := range c.args {
			b.WriteString(event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": a}}))
		}
		b.WriteString(event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx}))
		idx++
	}
	stop := string(tr.stop)
	if tr.stop == api.StopUnknown {
		stop = "pause_turn"
	}
	b.WriteString(event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": tr.out}}))
	b.WriteString(event("message_stop", map[string]any{"type": "message_stop"}))
	return b.String()
}
