package envbind

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A cancel the provider answers with an unknown receipt did not
// demonstrably stop the execute: it is recorded as tool_cancel_failed with
// an unknown, ambiguous outcome, never as tool_cancel_ended.
func TestCancelAnsweredUnknownIsRecordedUnknown(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := provider(t, func(ctx context.Context, op envapi.Operation) envapi.Receipt {
		switch op.Request.Type {
		case envapi.RequestExecute:
			arrived <- struct{}{}
			<-ctx.Done() // Brain gave up on the execute
			return envapi.Unknown("abandoned")
		case envapi.RequestCancel:
			return envapi.Unknown("the invocation may still be running")
		}
		return envapi.Accepted()
	})
	engine, _ := engineOn(t, testBinder(t, Config{}))
	ctx := context.Background()
	sum, err := engine.Create(ctx, "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL}},
		Tools: []api.Tool{{Name: "slow", Description: "slow", InputSchema: json.RawMessage(`{"type":"object"}`),
			Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{"kind":"slow"}`)}}}},
	})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("create: %+v %v", sum, err)
	}
	id := sum.SessionID
	sent := make(chan error, 1)
	go func() {
		_, err := engine.Send(ctx, id, api.UserInput{Message: `{"tool_calls":[{"name":"slow","input":{}}]}`})
		sent <- err
	}()
	<-arrived
	if err := engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	<-sent
	ev := waitEvent(t, engine, id, api.KindToolCancelFailed, api.KindToolCancelEnded)
	if ev.EventType != api.KindToolCancelFailed {
		t.Fatalf("the cancel answered unknown was recorded as %s %s, want %s", ev.EventType, ev.Data, api.KindToolCancelFailed)
	}
	var f api.Failure
	if err := json.Unmarshal(ev.Data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Code != api.FailureUnknown || !f.Ambiguous || f.Message != "the invocation may still be running" {
		t.Fatalf("tool_cancel_failed = %+v, want code unknown, ambiguous, the provider's message", f)
	}
}

// A remote agentloop whose execute is answered accepted or progress was
// dispatched with no result: the turn's outcome is unknown, not a failure
// of the loop.
func TestRemoteLoopAcceptedIsUnknown(t *testing.T) {
	for _, answer := range []envapi.Receipt{envapi.Accepted(), envapi.Progress(json.RawMessage(`{"step":1}`))} {
		t.Run(string(answer.Type), func(t *testing.T) {
			srv := provider(t, func(ctx context.Context, op envapi.Operation) envapi.Receipt {
				if op.Request.Type == envapi.RequestExecute {
					return answer
				}
				return envapi.Accepted()
			})
			engine, _ := engineOn(t, testBinder(t, Config{}))
			ctx := context.Background()
			sum, err := engine.Create(ctx, "", api.CreateSessionRequest{
				Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
				Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"type":"remote","name":"loop"}`), Environment: "box"},
				Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL}},
			})
			if err != nil || sum.Status != api.StatusIdle {
				t.Fatalf("create: %+v %v", sum, err)
			}
			_, err = engine.Send(ctx, sum.SessionID, api.UserInput{Message: "go"})
			if code := session.Code(err); code != api.FailureUnknown {
				t.Errorf("send = %v (code %s), want the turn's outcome unknown", err, code)
			}
			failed := eventsOf(t, engine, sum.SessionID, api.KindTurnFailed)
			if len(failed) != 1 {
				t.Fatalf("%d turn_failed events", len(failed))
			}
			var f api.Failure
			if err := json.Unmarshal(failed[0].Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Code != api.FailureUnknown {
				t.Fatalf("turn_failed = %+v, want code unknown", f)
			}
		})
	}
}
