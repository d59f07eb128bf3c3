package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestOffersNoTools: in a session that declares tools, the loop asks the
// model without offering them (it dispatches no tool call), and a model
// that asks for a tool anyway fails the turn: the transcript keeps no
// tool_use without its result, so the next turn still runs.
func TestOffersNoTools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module and runs a whole Brain over loopback")
	}
	ctx, c, impl := admittedLoop(t)
	host, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.Sessions.Create(ctx, api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "demo"},
		Agentloop:    &api.Agentloop{Implementation: impl},
		Environments: []api.Environment{host.Environment("local")},
		Tools: []api.Tool{{
			Name: "lookup", Description: "Looks a word up.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements:  map[string]api.Placement{"local": {Implementation: json.RawMessage(`{}`)}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	offered := -1
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == "model_call_started" {
			var mc struct {
				Tools int `json:"tools"`
			}
			_ = json.Unmarshal(ev.Data, &mc)
			offered = mc.Tools
		}
	}
	if offered != 0 {
		t.Fatalf("the model call offered %d tools, want none", offered)
	}

	_, err = s.Send(ctx, api.UserInput{Message: `{"tool_calls":[{"name":"lookup","input":{}}]}`})
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.FailureAgentloopFailed || !strings.Contains(ae.Message, "offers no tools") {
		t.Fatalf("send asking for a tool = %v, want agentloop_failed saying the loop offers no tools", err)
	}
	if _, err := s.Send(ctx, api.UserInput{Message: "again"}); err != nil {
		t.Fatalf("the turn after: %v", err)
	}
	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tr.Messages {
		for _, b := range m.Content {
			got = append(got, string(m.Role)+":"+b.Type+":"+b.Text)
		}
	}
	want := "user:text:hello | assistant:text:echo: hello | user:text:again | assistant:text:echo: again"
	if strings.Join(got, " | ") != want {
		t.Fatalf("transcript %s, want %s", strings.Join(got, " | "), want)
	}
}
