package loophost_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
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
	loop, err := h.Func(context.Background(), lid)
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
	if _, err = loop(context.Background(), newFake(), input("hi")); !overloadedTurn(err, loophost.ErrClosed) {
		t.Errorf("an activation on a closed host: %v, want a retryable overloaded TurnError wrapping ErrClosed", err)
	}
}

// Naming an agentloop on a closed host fails as an activation on it does:
// with a retryable overloaded TurnError wrapping ErrClosed, which the
// engine records as such and not as a failure of the loop
// (agentloop_failed).
func TestClosedHostResolvesAsAnActivationFails(t *testing.T) {
	h := openHost(t, loophost.Options{CacheDir: t.TempDir()})
	id := admit(t, h, answering("", `{"result":1}`))
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, resolve := range resolvers(h, id) {
		if _, err := resolve(); !overloadedTurn(err, loophost.ErrClosed) {
			t.Errorf("%s on a closed host: %v, want a retryable overloaded TurnError wrapping ErrClosed", name, err)
		}
	}
}

// Close waits for an admission under way only as long as its context
// lasts: it then answers that context's error, and the runtime is
// released once the admission ends. From the moment it begins, calls that
// would wait for that admission answer at once that the host is closed.
func TestCloseWaitsForAnAdmissionOnlyAsLongAsItsContext(t *testing.T) {
	loops := newGatedShared()
	h := openHost(t, loophost.Options{CacheDir: t.TempDir(), Shared: loops})
	otherID, _ := loops.memShared.PutModule(context.Background(), answering("", `{"result":1}`))
	holdAdmission(t, h, loops)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	promptly(t, "Close past its deadline", func() {
		if err := h.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close past its deadline = %v, want context.DeadlineExceeded", err)
		}
	})
	promptly(t, "Admit on the closed host", func() {
		if a, err := h.Admit(context.Background(), answering("", `{"result":2}`)); !errors.Is(err, loophost.ErrClosed) {
			t.Errorf("Admit on the closed host = %+v %v, want ErrClosed", a, err)
		}
	})
	promptly(t, "Find on the closed host", func() {
		if a, ok, err := h.Find(context.Background(), otherID); !errors.Is(err, loophost.ErrClosed) {
			t.Errorf("Find on the closed host = %+v %v %v, want ErrClosed", a, ok, err)
		}
	})
	promptly(t, "Func on the closed host", func() {
		if _, err := h.Func(context.Background(), otherID); !overloadedTurn(err, loophost.ErrClosed) {
			t.Errorf("Func on the closed host = %v, want a retryable overloaded TurnError wrapping ErrClosed", err)
		}
	})
}
