package envbind

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A remote agentloop's execute is its turn: the turn's own deadline bounds
// it, not Config.ResponseTimeout, which bounds every other operation. A
// loop that answers after ResponseTimeout (the turn here has no deadline)
// ends its turn; the environment was never unreachable.
func TestRemoteTurnOutlivesResponseTimeout(t *testing.T) {
	const bound = 100 * time.Millisecond
	srv := provider(t, func(ctx context.Context, op envapi.Operation) envapi.Receipt {
		if op.Request.Type != envapi.RequestExecute {
			return envapi.Accepted()
		}
		select {
		case <-time.After(4 * bound): // a turn that takes its time
		case <-ctx.Done():
		}
		return envapi.Result(json.RawMessage(`{"result":"fine"}`))
	})
	engine, _ := engineOn(t, testBinder(t, Config{ResponseTimeout: bound}))
	ctx := context.Background()
	sum, err := engine.Create(ctx, "", api.CreateSessionRequest{
		Model:        api.ModelConfig{Provider: "scripted", Name: "m"},
		Agentloop:    &api.Agentloop{Implementation: json.RawMessage(`{"type":"remote","name":"loop"}`), Environment: "box"},
		Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: srv.URL}},
	})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("create: %+v %v", sum, err)
	}
	if _, err := engine.Send(ctx, sum.SessionID, api.UserInput{Message: "go"}); err != nil {
		t.Fatalf("send = %v, want the turn ended by the loop's result", err)
	}
	if n := len(eventsOf(t, engine, sum.SessionID, api.KindEnvironmentUnreachable)); n != 0 {
		t.Fatalf("%d environment_unreachable events for a loop that answered", n)
	}
}
