package envsdk_test

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// ownFinisher finishes its Tool itself and answers the error of that
// Finish as its own.
type ownFinisher struct{ envsdk.Base }

func (ownFinisher) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	out := envapi.OK(json.RawMessage(`"done"`))
	if _, err := x.Invocation.Finish(c.Context(), &out); err != nil {
		return envapi.Receipt{}, err
	}
	return envapi.Returned(nil), nil
}

// TestOwnFinishAckLostIsUnknown: an Execute that answers the error of its
// own Finish whose acknowledgement was lost answers unknown, as the
// handler's own finish does: the outcome may have been committed, so it is
// no definite failure.
func TestOwnFinishAckLostIsUnknown(t *testing.T) {
	for _, f := range []envtest.Fault{{Kind: envtest.LoseAck}, {Kind: envtest.ServerError, Status: 500}} {
		b := envtest.NewBrain(t)
		b.Inject(envapi.MethodFinish, f)
		g := b.ToolGrant("ses_1", 1)
		srv := serve(t, ownFinisher{}, nil)
		if r := send(t, srv, execute(1, "x", nil, &g)).Receipt; r.Type != envapi.ReceiptUnknown {
			t.Errorf("execute whose own finish met fault %v answered %+v, want unknown", f.Kind, r)
		}
	}
}
