package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// slowWork is an Environments whose call "work" waits for gate, then uses
// the call's controller context: it emits and asks to delete box.
type slowWork struct {
	engine  *Engine
	started chan struct{}
	gate    chan struct{}
	emitted chan error
	deleted chan error
}

func (f *slowWork) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.Request.Type != envapi.RequestCall || op.Request.Name != "work" {
		return envapi.Accepted(), nil
	}
	close(f.started)
	<-f.gate
	ctrl, err := f.engine.Controller(op.SessionID, op.Sequence)
	if err != nil {
		f.emitted <- err
		f.deleted <- err
		return envapi.Result(json.RawMessage(`null`)), nil
	}
	_, err = ctrl.Call(ctx, envapi.MethodEmit, json.RawMessage(`{"event_type":"late","data":null}`))
	f.emitted <- err
	_, err = ctrl.Call(ctx, envapi.MethodEnvironments, json.RawMessage(`{"operation":"delete","environment":{"name":"box","sequence":1}}`))
	f.deleted <- err
	return envapi.Result(json.RawMessage(`null`)), nil
}

// The controller context of an operation on a binding that was replaced
// meanwhile speaks for the old incarnation: like its emit, its
// environments requests are refused, and nothing they ask for happens.
func TestReplacedControllerCannotControl(t *testing.T) {
	ctx := context.Background()
	envs := &slowWork{started: make(chan struct{}), gate: make(chan struct{}), emitted: make(chan error, 1), deleted: make(chan error, 1)}
	h := newHarness(t, Config{Environments: envs}, nil)
	envs.engine = h.engine
	methods := map[string]api.EnvironmentMethod{
		"work":  {Description: "work", InputSchema: json.RawMessage(`{}`)},
		"reset": replaceMethods["reset"],
	}
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{
		{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"},
		{Name: "other", Driver: api.DriverHTTP, URL: "http://127.0.0.1:2", Methods: methods,
			Environments: []api.EnvironmentGrant{{Environment: "box", Permissions: []string{"read", "delete"}}}},
	}})
	work := make(chan error, 1)
	go func() {
		_, err := h.engine.CallEnvironment(ctx, id, "other", "work", json.RawMessage(`{}`))
		work <- err
	}()
	<-envs.started
	if _, err := h.engine.CallEnvironment(ctx, id, "other", "reset", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if len(ofKind(h.records(id), kindEnvironmentReplaced)) != 1 {
		t.Fatal("other was not replaced")
	}
	close(envs.gate)
	if err := <-envs.emitted; !errors.Is(err, ErrExecutionClosed) {
		t.Fatalf("emit through the replaced binding's context: %v", err)
	}
	if err := <-envs.deleted; !errors.Is(err, ErrExecutionClosed) {
		t.Errorf("delete through the replaced binding's context: %v, want it refused as closed", err)
	}
	if err := <-work; err != nil {
		t.Fatalf("work: %v", err)
	}
	if n := len(ofKind(h.records(id), api.KindEnvironmentTeardownStarted)); n != 0 {
		t.Fatalf("the replaced binding's context tore box down (%d teardowns)", n)
	}
}
