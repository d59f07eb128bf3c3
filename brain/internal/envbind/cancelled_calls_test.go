package envbind

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Cancellation makes the calls that follow it fail: a tool's finish (or
// result, returned, emit) that reaches Brain after Interrupt returned is
// refused as a closed execution (the callback route answers 401), and the
// tool ends cancelled, not with the outcome the late call carried.
func TestToolCallsAfterCancelAreRefused(t *testing.T) {
	arrived := make(chan uint64, 1)
	srv := provider(t, func(ctx context.Context, op envapi.Operation) envapi.Receipt {
		if op.Request.Type == envapi.RequestExecute {
			arrived <- op.Sequence
			<-ctx.Done()
			return envapi.Unknown("abandoned")
		}
		return envapi.Accepted()
	})
	engine, _ := engineOn(t, testBinder(t, Config{}))
	ctx := context.Background()
	for _, method := range []string{envapi.MethodFinish, envapi.MethodReturned, envapi.MethodResult, envapi.MethodEmit} {
		sum, err := engine.Create(ctx, "", api.CreateSessionRequest{
			Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL}},
			Tools: []api.Tool{{Name: "slow", Description: "slow", InputSchema: json.RawMessage(`{"type":"object"}`),
				Placements: map[string]api.Placement{"box": {Implementation: json.RawMessage(`{"kind":"slow"}`)}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := sum.SessionID
		sent := make(chan error, 1)
		go func() {
			_, err := engine.Send(ctx, id, api.UserInput{Message: `{"tool_calls":[{"name":"slow","input":{}}]}`})
			sent <- err
		}()
		seq := <-arrived
		svc, err := engine.Execution(id, seq)
		if err != nil {
			t.Fatal(err)
		}
		if err := engine.Interrupt(ctx, id); err != nil {
			t.Fatal(err)
		}
		input := json.RawMessage(`{"status":"ok","value":"late"}`)
		if method == envapi.MethodEmit {
			input = json.RawMessage(`{"event_type":"late","data":{}}`)
		}
		if _, err := svc.Call(ctx, method, input); !errors.Is(err, session.ErrExecutionClosed) {
			t.Errorf("%s after the interrupt = %v, want it refused as a closed execution", method, err)
		}
		<-sent
		ev := waitEvent(t, engine, id, api.KindToolCallEnded)
		var ended api.ToolCallEnded
		if err := json.Unmarshal(ev.Data, &ended); err != nil {
			t.Fatal(err)
		}
		if ended.Outcome.Status != api.OutcomeCancelled {
			t.Errorf("%s after the interrupt: the tool ended %+v, want cancelled", method, ended.Outcome)
		}
		for _, kind := range []string{api.KindToolResultEmitted, api.KindToolCallReturned, "late"} {
			if n := len(eventsOf(t, engine, id, kind)); n != 0 {
				t.Errorf("%s after the interrupt committed %d %s", method, n, kind)
			}
		}
	}
}
