package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// observingSetup is an Environments whose setup reports an actionable
// observation through the setup's controller context before it answers.
type observingSetup struct {
	engine *Engine
	err    chan error
}

func (o *observingSetup) Deliver(ctx context.Context, op Operation) (envapi.Receipt, error) {
	if op.Request.Type == envapi.RequestSetup {
		svc, err := o.engine.Controller(op.SessionID, op.Sequence)
		if err == nil {
			_, err = svc.Call(ctx, envapi.MethodResult, json.RawMessage(
				`{"observation":{"scope":"resource","resource":"disk","code":"degraded","message":"slow disk"}}`))
		}
		o.err <- err
	}
	return envapi.Accepted(), nil
}

// An actionable observation reported while the session is being created
// wakes the agentloop once the session is idle, as one reported later
// does: it is not left pending until the next message.
func TestObservationDuringSetupWakesLoop(t *testing.T) {
	envs := &observingSetup{err: make(chan error, 1)}
	h := newHarness(t, Config{Environments: envs}, nil)
	envs.engine = h.engine
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "box", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"}}})
	if err := <-envs.err; err != nil {
		t.Fatalf("result through the setup's context: %v", err)
	}
	obs := ofKind(h.records(id), api.KindOutputEmitted)
	if len(obs) != 1 {
		t.Fatalf("records = %v, want one output_emitted", kinds(h.records(id)))
	}
	ev := h.waitEvent(id, obs[0].Sequence, api.KindActivationEnded)
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindTurnStarted)); n != 0 || ev.Sequence < obs[0].Sequence {
		t.Fatalf("records = %v, want an event-triggered activation after the observation", kinds(recs))
	}
}
