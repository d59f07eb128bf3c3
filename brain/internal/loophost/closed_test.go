package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A host that is closed runs nothing more, and says so as a server that
// is stopping does: a Tool's execute, through the built-in environment or
// RunTool, fails with unavailable (retryable: the same call may run once
// the server is back), never with unsupported, which would tell the loop
// that the implementation can never run; an activation of an agentloop
// fails with overloaded (retryable), not as a failure of the loop.
func TestClosedHostAnswersUnavailable(t *testing.T) {
	h, tid := toolHost(t, loophost.Options{})
	lid := admit(t, h, guest)
	loop, err := h.Func(lid)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"op":"echo"}`)
	local := api.Environment{Name: "local", Driver: api.DriverBrain}
	delivered, err := h.Environments(nil).Deliver(context.Background(), op(local, envapi.Execute(impl(tid, ""), in, nil, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]envapi.Receipt{
		"RunTool":                  runOp(t, h, tid, loophost.ToolCall{}, string(in)),
		"the built-in environment": delivered,
	} {
		if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeUnavailable || !r.Retryable {
			t.Errorf("%s on a closed host: %+v, want a retryable unavailable failure", name, r)
		}
	}
	_, err = loop(context.Background(), newFake(), input("hi"))
	var te *session.TurnError
	if !errors.As(err, &te) || te.Code != api.CodeOverloaded || !te.Retryable || !errors.Is(err, loophost.ErrClosed) {
		t.Errorf("an activation on a closed host: %v, want a retryable overloaded TurnError wrapping ErrClosed", err)
	}
}
