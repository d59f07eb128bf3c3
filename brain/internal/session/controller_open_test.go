package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// finishFirst is an Environments whose execute finishes its tool through
// the callback, then waits for gate and emits through the execute's
// controller context before it returns.
type finishFirst struct {
	engine   *Engine
	finished chan error
	gate     chan struct{}
	emitted  chan error
}

func (f *finishFirst) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.Request.Type != envapi.RequestExecute {
		return envapi.Accepted(), nil
	}
	svc, err := f.engine.Execution(op.SessionID, op.Sequence)
	if err == nil {
		_, err = svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`{"status":"ok","value":"done"}`))
	}
	f.finished <- err
	<-f.gate
	ctrl, err := f.engine.Controller(op.SessionID, op.Sequence)
	if err == nil {
		_, err = ctrl.Call(ctx, envapi.MethodEmit, json.RawMessage(`{"event_type":"cleanup_done","data":null}`))
	}
	f.emitted <- err
	return envapi.Returned(nil), nil
}

// The controller context of an execute stays open until the execute
// returns, also after the tool finished through its callback and the
// turn that dispatched it ended.
func TestControllerContextOpenUntilExecuteReturns(t *testing.T) {
	envs := &finishFirst{finished: make(chan error, 1), gate: make(chan struct{}), emitted: make(chan error, 1)}
	h := newHarness(t, Config{Environments: envs}, nil)
	envs.engine = h.engine
	id := h.create(toolSession("any"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{}}}, "reply": "ok"})}); err != nil {
		t.Fatal(err)
	}
	if err := <-envs.finished; err != nil {
		t.Fatalf("finish: %v", err)
	}
	close(envs.gate)
	if err := <-envs.emitted; err != nil {
		t.Fatalf("emit through the context of an execute that has not returned: %v", err)
	}
}
