package agentloop

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// returningDispatch is fakeServices whose tools end their synchronous
// phase with returned: they stay open, and their return events hold the
// events of that phase.
type returningDispatch struct {
	fakeServices
	events func(seq uint64) []api.Event
}

func (f *returningDispatch) Dispatch(_ context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	f.dispatched = append(f.dispatched, calls)
	out := make([]api.ToolReturn, len(calls))
	for i, c := range calls {
		f.seq++
		out[i] = api.ToolReturn{CallID: c.CallID, Sequence: f.seq, Events: f.events(f.seq)}
	}
	return out, nil
}

func event(seq uint64, kind string, v any) api.Event {
	data, _ := json.Marshal(v)
	return api.Event{Sequence: seq, EventType: kind, Data: data}
}

// A tool that returns with output and finishes later ("result and returned
// end only the synchronous phase, optionally emitting output"): the model
// is shown that output with the pending note, not the note alone; so is
// the last result a tool emitted before it returned.
func TestDefaultReturnedOutputReachesModel(t *testing.T) {
	for name, c := range map[string]struct {
		events  func(seq uint64) []api.Event
		want    string
		isError bool
	}{
		"returned": {
			events: func(seq uint64) []api.Event {
				return []api.Event{event(seq+1, api.KindToolCallReturned, map[string]any{"sequence": seq,
					"outcome": api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"job 42 started"`)}})}
			},
			want: `{"sequence":1,"status":"pending","output":"job 42 started"}`,
		},
		"returned content": {
			events: func(seq uint64) []api.Event {
				return []api.Event{event(seq+1, api.KindToolCallReturned, map[string]any{"sequence": seq,
					"outcome": api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`{"job":42}`), Content: json.RawMessage(`"started job 42"`)}})}
			},
			want: `{"sequence":1,"status":"pending","output":"started job 42"}`,
		},
		"emitted then returned": {
			events: func(seq uint64) []api.Event {
				return []api.Event{
					event(seq+1, api.KindToolResultEmitted, map[string]any{"sequence": seq,
						"result": api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`{"progress":0.5}`)}}),
					event(seq+2, api.KindToolCallReturned, map[string]any{"sequence": seq}),
				}
			},
			want: `{"sequence":1,"status":"pending","output":{"progress":0.5}}`,
		},
		"returned error": {
			events: func(seq uint64) []api.Event {
				return []api.Event{event(seq+1, api.KindToolCallReturned, map[string]any{"sequence": seq,
					"outcome": api.Outcome{Status: api.OutcomeFailed, Error: &api.OutcomeError{Code: "busy", Message: "queue full"}}})}
			},
			want:    `{"sequence":1,"status":"pending","output":{"status":"error","error":{"code":"busy","message":"queue full","retryable":false}}}`,
			isError: true,
		},
		"returned nothing": {
			events: func(seq uint64) []api.Event {
				return []api.Event{event(seq+1, api.KindToolCallReturned, map[string]any{"sequence": seq})}
			},
			want: `{"sequence":1,"status":"pending"}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			uses := api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{
				{Type: api.BlockToolUse, ID: "call_1", Name: "job", Input: json.RawMessage(`{}`)}}}
			f := &returningDispatch{events: c.events, fakeServices: fakeServices{answers: []api.ModelResult{
				{Message: uses, StopReason: api.StopToolUse},
				{Message: text("assistant", "started"), StopReason: api.StopEndTurn},
			}}}
			tools := []api.ActivationTool{{Name: "job", Environments: []string{"box"}}}
			if _, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Tools: tools}); err != nil {
				t.Fatal(err)
			}
			res := f.requests[1].Messages[2].Content[0]
			if string(res.Content) != c.want || res.IsError == nil || *res.IsError != c.isError {
				t.Fatalf("tool result = %s (is_error %v), want %s (is_error %v)", res.Content, *res.IsError, c.want, c.isError)
			}
		})
	}
}
