package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// keeper finishes its Tool, then tries to emit through the invocation and
// to finish again, and keeps its operation context for after the execute
// returned.
type keeper struct {
	envsdk.Base
	mu       sync.Mutex
	kept     *envsdk.Ctx
	emitErr  error
	againErr error
}

func (k *keeper) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	ctx := c.Context()
	out := envapi.OK(json.RawMessage(`"done"`))
	if _, err := x.Invocation.Finish(ctx, &out); err != nil {
		return envapi.Receipt{}, err
	}
	_, emitErr := x.Invocation.Emit(ctx, "after.finish", nil)
	_, againErr := x.Invocation.Finish(ctx, &out)
	k.mu.Lock()
	k.kept, k.emitErr, k.againErr = c, emitErr, againErr
	k.mu.Unlock()
	return envapi.Returned(nil), nil
}

// After Finish, emissions and a second Finish fail with ErrFinished and
// send nothing; an operation context used after its operation returned
// fails with ErrClosed and sends nothing.
func TestClosedAuthorityFailsLocally(t *testing.T) {
	b := newFakeBrain(t)
	k := &keeper{}
	srv := serve(t, k, nil)
	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{SessionID: "ses_1", Environment: "env", Sequence: 3,
		Context: b.grant(envapi.MethodEmit, envapi.MethodResult, envapi.MethodEnvironments),
		Request: envapi.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), nil, b.grant(envapi.ToolMethods()...))}}
	body, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if r := send(t, srv, body).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	k.mu.Lock()
	kept, emitErr, againErr := k.kept, k.emitErr, k.againErr
	k.mu.Unlock()
	if !errors.Is(emitErr, envsdk.ErrFinished) || !errors.Is(againErr, envsdk.ErrFinished) {
		t.Fatalf("emit after finish = %v, second finish = %v, want ErrFinished", emitErr, againErr)
	}
	if _, err := kept.Emit(context.Background(), "late", nil); !errors.Is(err, envsdk.ErrClosed) {
		t.Fatalf("emit on a returned operation's context = %v, want ErrClosed", err)
	}
	if _, err := kept.Environments(context.Background(), envapi.ControlRequest{Operation: envapi.ControlList}); !errors.Is(err, envsdk.ErrClosed) {
		t.Fatalf("environments on a returned operation's context = %v, want ErrClosed", err)
	}
	b.mu.Lock()
	n := len(b.calls)
	b.mu.Unlock()
	if n != 1 || b.count(envapi.MethodFinish) != 1 {
		t.Fatalf("Brain received %d calls, want the one finish", n)
	}
}
