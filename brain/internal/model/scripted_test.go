package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

func user(text string) api.Message {
	return api.UserMessage(api.UserInput{Message: text})
}

func TestScriptedEcho(t *testing.T) {
	res, err := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{user("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Message.Text(); got != "echo: hi" {
		t.Fatalf("text = %q, want %q", got, "echo: hi")
	}
	if res.StopReason != api.StopEndTurn || res.Message.Role != api.RoleAssistant {
		t.Fatalf("stop = %q role = %q", res.StopReason, res.Message.Role)
	}
	// A JSON object without script keys is echoed too.
	res, _ = Scripted{}.Call(context.Background(), Request{Messages: []api.Message{user(`{"a":1}`)}}, nil)
	if res.Message.Text() != `echo: {"a":1}` {
		t.Fatalf("text = %q", res.Message.Text())
	}
}

func TestParseScript(t *testing.T) {
	for _, c := range []struct {
		text  string
		reply string // "" when the text is not a script
	}{
		{`{"reply":"r"}`, "r"},
		{" \t\r\n{\"reply\":\"ws\"}", "ws"}, // JSON's own leading whitespace
		{`{"a":1}`, ""},                     // an object without script keys
		{`[{"reply":"r"}]`, ""},             // not an object
		{`"{\"reply\":\"r\"}"`, ""},         // a string
		{"\u00a0{\"reply\":\"r\"}", ""},     // not JSON whitespace
		{"hello", ""},
		{"", ""},
		{`{"reply":`, ""},
	} {
		s, ok := ParseScript(c.text)
		got := ""
		if s.Reply != nil {
			got = *s.Reply
		}
		if ok != (c.reply != "") || got != c.reply {
			t.Errorf("ParseScript(%q) = reply %q, %v; want reply %q", c.text, got, ok, c.reply)
		}
	}
}

func TestScriptedToolCallsThenResults(t *testing.T) {
	script := `{"tool_calls":[{"name":"echo","input":{"x":1}},{"name":"echo","input":{"x":2}}]}`
	msgs := []api.Message{user(script)}
	res, err := Scripted{}.Call(context.Background(), Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopToolUse || len(res.Message.Content) != 2 {
		t.Fatalf("got %+v", res)
	}
	for i, b := range res.Message.Content {
		if b.Type != api.BlockToolUse || b.ID != []string{"call_1", "call_2"}[i] || b.Name != "echo" {
			t.Fatalf("block %d = %+v", i, b)
		}
	}
	msgs = append(msgs, res.Message, api.Message{Role: api.RoleUser, Content: []api.ContentBlock{
		api.ToolResultBlock("call_1", json.RawMessage(`{"x":1}`), false),
		api.ToolResultBlock("call_2", json.RawMessage(`{"x":2}`), false),
	}})
	res, err = Scripted{}.Call(context.Background(), Request{Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != api.StopEndTurn || res.Message.Text() != `[{"x":1},{"x":2}]` {
		t.Fatalf("got %q %q", res.StopReason, res.Message.Text())
	}
	// With reply, the second call answers the reply.
	msgs[0] = user(`{"tool_calls":[{"name":"echo"}],"reply":"done"}`)
	res, _ = Scripted{}.Call(context.Background(), Request{Messages: msgs}, nil)
	if res.Message.Text() != "done" {
		t.Fatalf("got %q", res.Message.Text())
	}
}

func TestScriptedReplyAlone(t *testing.T) {
	res, _ := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{user(`{"reply":"hello there"}`)}}, nil)
	if res.Message.Text() != "hello there" || res.StopReason != api.StopEndTurn {
		t.Fatalf("got %+v", res)
	}
}

func TestScriptedFail(t *testing.T) {
	_, err := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{user(`{"fail":{"code":"rate_limited","message":"slow down"}}`)}}, nil)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Code != "rate_limited" || pe.Message != "slow down" {
		t.Fatalf("err = %v", err)
	}
}

func TestScriptedDelayHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Scripted{}.Call(ctx, Request{Messages: []api.Message{user(`{"delay_ms":60000}`)}}, nil)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("delayed call ignored cancellation")
	}
	start := time.Now()
	if _, err := (Scripted{}).Call(context.Background(), Request{Messages: []api.Message{user(`{"delay_ms":30,"reply":"x"}`)}}, nil); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("delay_ms not honoured")
	}
}

func TestScriptedStream(t *testing.T) {
	var deltas []string
	res, err := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{user(`{"stream":true,"reply":"one two three four"}`)}},
		func(d Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != res.Message.Text() {
		t.Fatalf("deltas %q, text %q", deltas, res.Message.Text())
	}
}

func TestProvidersOpen(t *testing.T) {
	if _, err := Default().Open(Spec{Provider: "scripted", Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Default().Open(Spec{Provider: "nope"}); !errors.Is(err, ErrUnknownProvider) {
		t.Fatalf("err = %v", err)
	}
}

// A scripted tool call whose input is not a JSON object fails the call as
// model_output_invalid, as a provider's would; nothing reaches a tool.
func TestScriptedToolInputMustBeObject(t *testing.T) {
	for _, input := range []string{`[1]`, `"x"`, `null`, `7`} {
		_, err := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{
			user(`{"tool_calls":[{"name":"echo","input":` + input + `}]}`)}}, nil)
		var oe *OutputError
		if !errors.As(err, &oe) || oe.Code != api.CodeModelOutputInvalid {
			t.Errorf("input %s: %v, want model_output_invalid", input, err)
		}
	}
	// A delay beyond a time.Duration's range waits for the context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := (Scripted{}).Call(ctx, Request{Messages: []api.Message{user(`{"delay_ms":9223372036854775807,"reply":"late"}`)}}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("huge delay: %v, want the context's deadline", err)
	}
}

// FuzzScripted: any user message gives the scripted model's answer or an
// error, never a panic; tool calls carry JSON object inputs, and a delay
// never outlasts the call's context.
func FuzzScripted(f *testing.F) {
	f.Add(`hello`)
	f.Add(`{"tool_calls":[{"name":"echo","input":{"n":7}}],"reply":"done","stream":true}`)
	f.Add(`{"fail":{"code":"rate_limit","message":"slow"}}`)
	f.Add(`{"delay_ms":-5,"reply":""}`)
	f.Add(`{"tool_calls":[{"name":"x","input":[1]}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		res, err := Scripted{}.Call(ctx, Request{Messages: []api.Message{user(text)}}, func(Delta) {})
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("the call took %v", el)
		}
		if err != nil {
			return
		}
		for _, c := range res.Message.Content {
			if c.Type != api.BlockToolUse {
				continue
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(c.Input, &obj); err != nil || obj == nil {
				t.Fatalf("tool call %q with input %s", c.Name, c.Input)
			}
		}
	})
}

// A scripted tool call that names no tool fails the call as
// model_output_invalid, as a provider's would.
func TestScriptedToolCallMustNameATool(t *testing.T) {
	for _, call := range []string{`{"input":{}}`, `{"name":"","input":{}}`, `{"name":"  "}`} {
		res, err := Scripted{}.Call(context.Background(), Request{Messages: []api.Message{
			user(`{"tool_calls":[` + call + `]}`)}}, nil)
		var oe *OutputError
		if !errors.As(err, &oe) || oe.Code != api.CodeModelOutputInvalid {
			t.Errorf("call %s: %+v, %v; want model_output_invalid", call, res, err)
		}
	}
}

// TestScriptedStreamsNoEmptyDelta: a streamed answer with no text (tool
// calls, an empty reply) sends no live delta, as a provider's stream of
// such an answer carries no text fragment.
func TestScriptedStreamsNoEmptyDelta(t *testing.T) {
	for _, script := range []string{`{"stream":true,"tool_calls":[{"name":"echo","input":{"n":7}}]}`, `{"stream":true,"reply":""}`} {
		var deltas []string
		if _, err := (Scripted{}).Call(context.Background(), Request{Messages: []api.Message{user(script)}},
			func(d Delta) { deltas = append(deltas, d.Text) }); err != nil {
			t.Fatal(err)
		}
		if len(deltas) != 0 {
			t.Errorf("%s: deltas %q, want none", script, deltas)
		}
	}
}
