package session

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// slowSetup is an Environments whose setup of "i1" waits for gate.
type slowSetup struct {
	started chan struct{}
	gate    chan struct{}
	f       *fakeEnvs
}

func (s *slowSetup) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.Request.Type == envapi.RequestSetup && op.Environment == "i1" {
		close(s.started)
		<-s.gate
	}
	return s.f.Deliver(ctx, op)
}

// An environment whose setup is still in flight cannot be deleted: the
// delete is refused as a conflict and sends no teardown, so a setup that
// ends after it can never bring a torn-down binding back as ready.
func TestDeleteWhileSetupInFlight(t *testing.T) {
	ctx := context.Background()
	envs := &slowSetup{started: make(chan struct{}), gate: make(chan struct{}), f: newFakeEnvs(map[string]string{"tmpl": "echo", "i1": "echo"})}
	h := newHarness(t, Config{Environments: envs}, nil)
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "tmpl", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1",
		Template: &api.EnvironmentTemplate{MaxInstances: 3}}}})
	created := make(chan error, 1)
	go func() {
		_, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "i1"})
		created <- err
	}()
	<-envs.started
	ref := &envapi.EnvironmentRef{Name: "i1", Sequence: ofKind(h.records(id), kindEnvironmentCreated)[0].Sequence}
	_, derr := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlDelete, Environment: ref})
	close(envs.gate)
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: ref})
	if err != nil {
		t.Fatal(err)
	}
	v := decode[envapi.EnvironmentView](t, raw)
	teardowns := len(envs.f.opsOf(envapi.RequestTeardown))
	if teardowns != 0 && v.State == envapi.StateReady {
		t.Fatalf("i1 was torn down during its setup, and is now %s", v.State)
	}
	if Code(derr) != api.CodeConflict || teardowns != 0 {
		t.Fatalf("delete during setup = %v with %d teardowns, want a conflict and none", derr, teardowns)
	}
}
