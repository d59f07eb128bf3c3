package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A turn whose remote agentloop has dispatched a tool (through its
// callback) when the turn's wall deadline passes closes only after the
// tool's outcome is recorded and its bounded cancel is answered, as a
// turn of an in-process loop does.
func TestRemoteLoopTurnDeadlineWaitsForToolCancel(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxTurn = 300 * time.Millisecond
	h := newHarness(t, Config{Limits: lim, CancelDelivery: 400 * time.Millisecond},
		map[string]string{"box": "hang", "tools": "hangcancel"})
	dispatched := make(chan error, 1)
	h.envs.onOp = func(op Operation) {
		if op.Environment != "box" || op.Request.Type != envapi.RequestExecute {
			return
		}
		go func() {
			svc, err := h.engine.Execution(op.SessionID, op.Sequence)
			if err == nil {
				_, err = svc.Dispatch(context.Background(), []api.ToolInvocation{{CallID: "c1", Name: "echo", Input: json.RawMessage(`{}`)}})
			}
			dispatched <- err
		}()
	}
	req := remoteLoopSession()
	req.Environments = append(req.Environments, api.Environment{Name: "tools", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1"})
	req.Tools = []api.Tool{{Name: "echo", Description: "echo", InputSchema: json.RawMessage(`{"type":"object"}`),
		Placements: map[string]api.Placement{"tools": {Implementation: json.RawMessage(`{}`)}}}}
	id := h.create(req)
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); Code(err) != api.FailureTimeout {
		t.Fatalf("send = %v, want a timeout", err)
	}
	<-dispatched
	h.waitEvent(id, 0, api.KindToolCancelFailed)
	recs := h.records(id)
	ended := ofKind(recs, api.KindToolCallEnded)
	cancelled := ofKind(recs, api.KindToolCancelFailed)
	turn := ofKind(recs, api.KindTurnFailed)
	if len(ended) != 1 || len(cancelled) != 1 || len(turn) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	if o := decode[api.ToolCallEnded](t, ended[0].Data).Outcome; o.Status != api.OutcomeCancelled {
		t.Fatalf("tool outcome %+v, want cancelled", o)
	}
	if turn[0].Sequence < ended[0].Sequence || turn[0].Sequence < cancelled[0].Sequence {
		t.Fatalf("turn_failed at %d before the tool's outcome (%d) and its cancel's answer (%d): %v",
			turn[0].Sequence, ended[0].Sequence, cancelled[0].Sequence, kinds(recs))
	}
}
