package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestMemoOffersNoTools: in a session that declares tools, memo asks the
// model without offering them (it dispatches no tool call), and a model
// that asks for a tool anyway fails the turn: the transcript keeps no
// tool_use without its result, so the next turn still runs.
func TestMemoOffersNoTools(t *testing.T) {
	s, ctx := session(t, `{"loop":"memo"}`, api.Tool{
		Name: "lookup", Description: "Looks a word up.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Placements:  map[string]api.Placement{"loops": {Implementation: json.RawMessage(`{"loop":"memo"}`)}},
	})
	if _, err := s.Send(ctx, api.UserInput{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	if offered := toolsOffered(t, ctx, s); offered != 0 {
		t.Fatalf("the model call offered %d tools, want none", offered)
	}

	_, err := s.Send(ctx, api.UserInput{Message: `{"tool_calls":[{"name":"lookup","input":{}}]}`})
	var ae *api.ApiError
	if !errors.As(err, &ae) || ae.Code != api.FailureAgentloopFailed || !strings.Contains(ae.Message, "offers none") {
		t.Fatalf("send asking for a tool = %v, want agentloop_failed saying the loop offers none", err)
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

// toolsOffered answers how many tools the session's latest model call
// offered, as its model_call_started records them.
func toolsOffered(t *testing.T, ctx context.Context, s *client.Session) int {
	t.Helper()
	offered := -1
	for ev, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.EventType == "model_call_started" {
			var mc struct {
				Tools int `json:"tools"`
			}
			if err := json.Unmarshal(ev.Data, &mc); err != nil {
				t.Fatal(err)
			}
			offered = mc.Tools
		}
	}
	if offered < 0 {
		t.Fatal("no model call")
	}
	return offered
}
