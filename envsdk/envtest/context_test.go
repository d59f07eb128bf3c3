package envtest_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// observer posts an actionable observation through its setup's
// controller context, as ctx.emitResult does.
type observer struct {
	envsdk.Base
	seq chan uint64
	err chan error
}

func (o *observer) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	seq, err := c.EmitResult(c.Context(), envapi.Observation{Scope: envapi.ScopeEnvironment, Availability: envapi.Available, Message: "warm"}, map[string]string{"note": "ready"})
	o.seq <- seq
	o.err <- err
	return envsdk.SetupResult{}, nil
}

// The controller context's result method takes what the real Brain takes
// there, an observation {observation, content?}, so a provider's
// Ctx.EmitResult works against the fake Brain; a Tool Outcome is refused.
func TestContextResultTakesAnObservation(t *testing.T) {
	b := envtest.NewBrain(t)
	o := &observer{seq: make(chan uint64, 1), err: make(chan error, 1)}
	srv := httptest.NewServer(envsdk.NewHandler(o, &envsdk.Options{Token: "t"}))
	t.Cleanup(srv.Close)
	cmds := envtest.NewCommands("s1", "ws")
	cmd := cmds.Setup(nil)
	g := b.ContextGrant("s1", "ws", cmd.Operation.Sequence)
	cmd.Operation.Context = &g
	if _, _, resp, err := envtest.Post(context.Background(), nil, srv.URL, "t", cmd); err != nil || resp == nil || resp.Receipt.Type != envapi.ReceiptAccepted {
		t.Fatalf("setup: %v %+v", err, resp)
	}
	if seq, err := <-o.seq, <-o.err; err != nil || seq == 0 {
		t.Fatalf("EmitResult through the fake Brain's context = %d, %v; want a committed sequence", seq, err)
	}

	g2 := b.ContextGrant("s1", "ws", 50)
	status, body := call(t, g2, "result", envapi.OK(json.RawMessage(`1`)))
	want(t, "a Tool outcome to a controller context's result", status, body, 422, `"invalid_request"`)
}
