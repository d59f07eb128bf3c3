package envsdk_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// racingFinisher finishes its Tool itself, from another goroutine, as it
// answers a result.
type racingFinisher struct{ envsdk.Base }

func (racingFinisher) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	go func() {
		out := envapi.OK(json.RawMessage(`"mine"`))
		_, _ = x.Invocation.Finish(x.Context(), &out)
	}()
	return envsdk.Output("mine")
}

// TestOwnFinishRacingResult: a provider that finishes the Tool itself
// while it answers a result is never answered unknown: the handler sends
// no finish of its own then, so no acknowledgement of it was lost.
func TestOwnFinishRacingResult(t *testing.T) {
	b := envtest.NewBrain(t)
	srv := serve(t, racingFinisher{}, nil)
	for seq := uint64(1); seq <= 500; seq++ {
		g := b.ToolGrant("ses_1", seq)
		r := send(t, srv, execute(seq, "x", nil, &g)).Receipt
		if r.Type == envapi.ReceiptUnknown {
			t.Fatalf("execute %d whose provider finished it itself answered %+v, want its result", seq, r)
		}
	}
}
