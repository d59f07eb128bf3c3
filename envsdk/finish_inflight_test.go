package envsdk_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// earlyFinisher starts its Finish under x.Context() and answers returned
// while that finish is on its way to Brain.
type earlyFinisher struct {
	envsdk.Base
	arrived  chan struct{} // Brain has the finish
	finished chan error    // what Finish returned
}

func (p *earlyFinisher) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	go func() {
		out := envapi.OK(json.RawMessage(`"done"`))
		_, err := x.Invocation.Finish(x.Context(), &out)
		p.finished <- err
	}()
	select {
	case <-p.arrived:
	case <-c.Context().Done():
		return envapi.Receipt{}, c.Context().Err()
	}
	return envapi.Returned(nil), nil
}

// TestReturnedWhileFinishInFlight: x.Context() ends once Finish was
// answered, not as soon as it was called. A Tool that answers returned
// while its Finish is on the way keeps its context until Brain answers,
// so the finish is acknowledged rather than abandoned mid-call.
func TestReturnedWhileFinishInFlight(t *testing.T) {
	b := envtest.NewBrain(t)
	g := b.ToolGrant("ses_1", 1)
	p := &earlyFinisher{arrived: make(chan struct{}), finished: make(chan error, 1)}
	release := make(chan struct{})
	b.Handle(envapi.MethodFinish, func(envtest.Call) (int, any) {
		close(p.arrived)
		<-release
		return 200, 1234
	})
	srv := serve(t, p, nil)
	ms := int64(10_000)
	if r := send(t, srv, execute(1, "x", &ms, &g)).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v, want returned", r)
	}
	close(release)
	if err := <-p.finished; err != nil {
		t.Fatalf("Finish answered by Brain after the execute returned = %v, want its sequence", err)
	}
}
