package model

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// conversation is the request whose wire form each dialect must produce
// exactly: system, a tool, a user turn with an image, an assistant turn
// with text and a tool call, the tool's result, a developer note, options
// and an output bound.
func conversation() Request {
	sys := "You are terse."
	max := int64(256)
	return Request{
		System:          &sys,
		Tools:           []api.ToolDefinition{weatherTool},
		MaxOutputTokens: &max,
		Options:         json.RawMessage(`{"temperature":0.5}`),
		Messages: []api.Message{
			api.UserMessage(api.UserInput{Message: "Weather in Paris?", Media: []api.Media{{Type: "image", URL: "https://example.com/paris.png"}}}),
			{Role: api.RoleAssistant, Content: []api.ContentBlock{
				api.TextBlock("Let me check."),
				{Type: api.BlockToolUse, ID: "call_1", Name: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			}},
			{Role: api.RoleUser, Content: []api.ContentBlock{
				api.ToolResultBlock("call_1", json.RawMessage(`{"temp_c":21}`), false),
				api.ToolResultBlock("call_2", json.RawMessage(`"station offline"`), true),
			}},
			{Role: api.RoleDeveloper, Content: []api.ContentBlock{api.TextBlock("Answer in one line.")}},
		},
	}
}

const schema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// sameJSON compares a recorded body with the expected JSON, whole.
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body: %v", err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("expected body: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", " ")
		wb, _ := json.MarshalIndent(w, "", " ")
		t.Fatalf("request body\n%s\nwant\n%s", gb, wb)
	}
}

func sendConversation(t *testing.T, d dialect) recorded {
	t.Helper()
	f, c := open(t, d, Limits{})
	f.set(sse(d.render(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
	if _, err := c.Call(context.Background(), conversation(), nil); err != nil {
		t.Fatal(err)
	}
	return f.last(t)
}

func TestResponsesRequest(t *testing.T) {
	r := sendConversation(t, responsesDialect)
	sameJSON(t, r.Raw, `{
	 "model": "gpt-test",
	 "instructions": "You are terse.",
	 "input": [
	  {"role": "user", "content": [
	   {"type": "input_text", "text": "Weather in Paris?"},
	   {"type": "input_image", "image_url": "https://example.com/paris.png"}]},
	  {"role": "assistant", "content": "Let me check."},
	  {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
	  {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp_c\":21}"},
	  {"type": "function_call_output", "call_id": "call_2", "output": "station offline"},
	  {"role": "developer", "content": [{"type": "input_text", "text": "Answer in one line."}]}
	 ],
	 "tools": [{"type": "function", "name": "get_weather", "description": "Look up the weather", "parameters": `+schema+`, "strict": false}],
	 "max_output_tokens": 256,
	 "temperature": 0.5,
	 "store": false,
	 "stream": true,
	 "include": ["reasoning.encrypted_content"]
	}`)
}

func TestChatRequest(t *testing.T) {
	r := sendConversation(t, chatDialect)
	sameJSON(t, r.Raw, `{
	 "model": "llama-test",
	 "messages": [
	  {"role": "system", "content": "You are terse."},
	  {"role": "user", "content": [
	   {"type": "text", "text": "Weather in Paris?"},
	   {"type": "image_url", "image_url": {"url": "https://example.com/paris.png"}}]},
	  {"role": "assistant", "content": "Let me check.", "tool_calls": [
	   {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
	  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\":21}"},
	  {"role": "tool", "tool_call_id": "call_2", "content": "station offline"},
	  {"role": "system", "content": "Answer in one line."}
	 ],
	 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Look up the weather", "parameters": `+schema+`}}],
	 "max_tokens": 256,
	 "temperature": 0.5,
	 "stream": true,
	 "stream_options": {"include_usage": true}
	}`)
}

func TestAnthropicRequest(t *testing.T) {
	r := sendConversation(t, anthropicDialect)
	sameJSON(t, r.Raw, `{
	 "model": "claude-test",
	 "max_tokens": 256,
	 "system": "You are terse.",
	 "messages": [
	  {"role": "user", "content": [
	   {"type": "text", "text": "Weather in Paris?"},
	   {"type": "image", "source": {"type": "url", "url": "https://example.com/paris.png"}}]},
	  {"role": "assistant", "content": [
	   {"type": "text", "text": "Let me check."},
	   {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]},
	  {"role": "user", "content": [
	   {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"temp_c\":21}"},
	   {"type": "tool_result", "tool_use_id": "call_2", "content": "station offline", "is_error": true},
	   {"type": "text", "text": "Answer in one line."}]}
	 ],
	 "tools": [{"name": "get_weather", "description": "Look up the weather", "input_schema": `+schema+`}],
	 "temperature": 0.5,
	 "stream": true
	}`)
	// Without max_output_tokens the required max_tokens has its default.
	f, c := open(t, anthropicDialect, Limits{})
	f.set(sse(renderAnthropic(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
	if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.last(t).Body["max_tokens"]; got != float64(DefaultAnthropicMaxTokens) {
		t.Fatalf("max_tokens %v", got)
	}
}

// TestNoKeyNoCredential: a session without an API key (a local server)
// sends no credential header at all.
func TestNoKeyNoCredential(t *testing.T) {
	for _, d := range dialects {
		f := newFake(t)
		p, _ := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1"})
		c, err := p.Open(Spec{Provider: d.provider, Name: d.model})
		if err != nil {
			t.Fatal(err)
		}
		f.set(sse(d.render(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
		if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
			t.Fatal(err)
		}
		h := f.last(t).Header
		if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
			t.Errorf("%s: credential sent without a key", d.provider)
		}
	}
}

// TestResponseFormat maps a JSON-schema response_format into each dialect.
func TestResponseFormat(t *testing.T) {
	rf := json.RawMessage(`{"type":"json_schema","json_schema":{"name":"weather","schema":{"type":"object"},"strict":true}}`)
	want := map[string]string{
		ProviderOpenAI:     `{"format":{"type":"json_schema","name":"weather","schema":{"type":"object"},"strict":true}}`,
		ProviderOpenAIChat: `{"type":"json_schema","json_schema":{"name":"weather","schema":{"type":"object"},"strict":true}}`,
		ProviderAnthropic:  `{"format":{"type":"json_schema","schema":{"type":"object"}}}`,
	}
	field := map[string]string{ProviderOpenAI: "text", ProviderOpenAIChat: "response_format", ProviderAnthropic: "output_config"}
	for _, d := range dialects {
		f, c := open(t, d, Limits{})
		f.set(sse(d.render(turn{text: []string{"{}"}, stop: api.StopEndTurn})))
		if _, err := c.Call(context.Background(), Request{ResponseFormat: rf, Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(f.last(t).Body[field[d.provider]])
		sameJSON(t, got, want[d.provider])
	}
}

// TestAnthropicThinkingRoundTrip: thinking blocks come back as native
// blocks and are replayed verbatim; native blocks of another dialect are
// not sent.
func TestAnthropicThinkingRoundTrip(t *testing.T) {
	f, c := open(t, anthropicDialect, Limits{})
	stream := anthropicStart(10, 0) +
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}) +
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "thinking_delta", "thinking": "The user wants "}}) +
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "thinking_delta", "thinking": "the weather."}}) +
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}}) +
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) +
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}}) +
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1}) +
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 2, "content_block": map[string]any{"type": "text", "text": ""}}) +
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 2, "delta": map[string]any{"type": "text_delta", "text": "Sunny."}}) +
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 2}) +
		event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "stop_sequence", "stop_sequence": "###"}, "usage": map[string]any{"output_tokens": 30}}) +
		event("message_stop", map[string]any{"type": "message_stop"})
	f.set(sse(stream))
	var deltas []string
	res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, func(d Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopStopSequence || len(res.Message.Content) != 3 || res.Message.Text() != "Sunny." {
		t.Fatalf("result %+v", res)
	}
	if len(deltas) != 1 || deltas[0] != "Sunny." {
		t.Errorf("thinking leaked into deltas: %q", deltas)
	}
	th, red := res.Message.Content[0], res.Message.Content[1]
	if th.Type != api.BlockNative || th.Format != NativeAnthropicMessages || red.Format != NativeAnthropicMessages {
		t.Fatalf("blocks %+v", res.Message.Content)
	}
	sameJSON(t, th.Data, `{"type":"thinking","thinking":"The user wants the weather.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}`)
	sameJSON(t, red.Data, `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}`)

	msgs := []api.Message{api.UserMessage(api.UserInput{Message: "x"}), res.Message,
		{Role: api.RoleAssistant, Content: []api.ContentBlock{{Type: api.BlockNative, Format: NativeOpenAIResponses, Data: json.RawMessage(`{"type":"reasoning"}`)}}},
		api.UserMessage(api.UserInput{Message: "and tomorrow?"})}
	f.set(sse(renderAnthropic(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
	if _, err := c.Call(context.Background(), Request{Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.last(t).Body["messages"])
	sameJSON(t, got, `[
	 {"role":"user","content":[{"type":"text","text":"x"}]},
	 {"role":"assistant","content":[
	  {"type":"thinking","thinking":"The user wants the weather.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"},
	  {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
	  {"type":"text","text":"Sunny."}]},
	 {"role":"user","content":[{"type":"text","text":"and tomorrow?"}]}]`)
}

// TestResponsesReasoningRoundTrip: reasoning items are kept verbatim and
// replayed with their encrypted content (without their id); one without
// it is not sent.
func TestResponsesReasoningRoundTrip(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	reasoning := map[string]any{"id": "rs_6820f383d7c08191846711c5df8233bc", "type": "reasoning", "summary": []any{}, "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukE"}
	msg := map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": "Paris.", "annotations": []any{}}}}
	usage := map[string]any{"input_tokens": 50, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 90, "output_tokens_details": map[string]any{"reasoning_tokens": 64}, "total_tokens": 140}
	stream := event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
		event("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": map[string]any{"id": "rs_6820f383d7c08191846711c5df8233bc", "type": "reasoning", "summary": []any{}}}) +
		event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": reasoning}) +
		event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Paris.", "logprobs": []any{}}) +
		event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 4, "response": responsesEnvelope("completed", []any{reasoning, msg}, nil, usage)})
	f.set(sse(stream))
	res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "Capital of France?"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Message.Content) != 2 || res.Message.Content[0].Format != NativeOpenAIResponses || res.Message.Text() != "Paris." {
		t.Fatalf("result %+v", res.Message)
	}
	if res.Usage.ReasoningTokens == nil || *res.Usage.ReasoningTokens != 64 {
		t.Errorf("reasoning tokens %v", res.Usage.ReasoningTokens)
	}
	stale := api.ContentBlock{Type: api.BlockNative, Format: NativeOpenAIResponses, Data: json.RawMessage(`{"id":"rs_old","type":"reasoning","summary":[]}`)}
	msgs := []api.Message{api.UserMessage(api.UserInput{Message: "Capital of France?"}),
		{Role: api.RoleAssistant, Content: append([]api.ContentBlock{stale}, res.Message.Content...)},
		api.UserMessage(api.UserInput{Message: "And Italy?"})}
	f.set(sse(renderResponses(turn{text: []string{"Rome."}, stop: api.StopEndTurn})))
	if _, err := c.Call(context.Background(), Request{Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.last(t).Body["input"])
	sameJSON(t, got, `[
	 {"role":"user","content":[{"type":"input_text","text":"Capital of France?"}]},
	 {"type":"reasoning","summary":[],"encrypted_content":"gAAAAABoISQ24OyVRYbkYfukE"},
	 {"role":"assistant","content":"Paris."},
	 {"role":"user","content":[{"type":"input_text","text":"And Italy?"}]}]`)
}

// TestResponsesFailedEvent: response.failed carries the provider's error.
func TestResponsesFailedEvent(t *testing.T) {
	f, c := open(t, responsesDialect, Limits{})
	failed := responsesEnvelope("failed", nil, nil, nil)
	failed["error"] = map[string]any{"code": "server_error", "message": "The model failed to generate a response."}
	f.set(sse(event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": responsesEnvelope("in_progress", nil, nil, nil)}) +
		event("response.failed", map[string]any{"type": "response.failed", "sequence_number": 1, "response": failed})))
	_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != "server_error" || !pe.Retryable || pe.Message != "The model failed to generate a response." {
		t.Fatalf("err = %#v", err)
	}
}

// TestChatLocalServerQuirks: a usage chunk with "choices": null (vLLM), a
// stream that ends after the finish chunk without [DONE], tool calls with
// finish_reason "stop" (some local servers), and content_filter.
func TestChatLocalServerQuirks(t *testing.T) {
	f, c := open(t, chatDialect, Limits{})
	stop := "stop"
	f.set(sse(chatChunk(map[string]any{"role": "assistant", "content": nil}, nil, nil) +
		chatChunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_x", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Rome"}`}}}}, nil, nil) +
		chatChunk(map[string]any{}, &stop, nil) +
		event("", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": nil,
			"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}})))
	res, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 1 || res.Message.Content[0].ID != "call_x" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.InputTokens == nil || *res.Usage.InputTokens != 12 || *res.Usage.OutputTokens != 3 {
		t.Errorf("usage %+v", res.Usage)
	}
	filter := "content_filter"
	f.set(sse(chatChunk(map[string]any{"content": "Sorry"}, nil, nil) + chatChunk(map[string]any{}, &filter, nil) + "data: [DONE]\n\n"))
	res, err = c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
	if err != nil || res.StopReason != api.StopRefusal {
		t.Fatalf("content_filter: %v %q", err, res.StopReason)
	}
	// A file by URL has no Chat Completions form: refused before sending.
	n := len(f.requests())
	_, err = c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x", Media: []api.Media{{Type: "file", MediaType: "application/pdf", URL: "https://example.com/a.pdf"}}})}}, nil)
	if !errors.Is(err, ErrInvalidRequest) || len(f.requests()) != n {
		t.Fatalf("file block: %v", err)
	}
}

// TestDefaultAPIKeys: the operator's key serves sessions without one, and a
// session's own key wins.
func TestDefaultAPIKeys(t *testing.T) {
	f := newFake(t)
	p, err := New(Config{AnthropicBaseURL: f.srv.URL + "/v1", DefaultAPIKeys: map[string]string{ProviderAnthropic: "operator-key-123"}})
	if err != nil {
		t.Fatal(err)
	}
	f.set(sse(renderAnthropic(turn{text: []string{"ok"}, stop: api.StopEndTurn})))
	for _, tc := range []struct{ session, want string }{{"", "operator-key-123"}, {"session-key-456", "session-key-456"}} {
		c, _ := p.Open(Spec{Provider: ProviderAnthropic, Name: "m", APIKey: tc.session})
		if _, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil); err != nil {
			t.Fatal(err)
		}
		if got := f.last(t).Header.Get("X-Api-Key"); got != tc.want {
			t.Errorf("x-api-key %q, want %q", got, tc.want)
		}
	}
}
