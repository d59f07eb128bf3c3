package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A Finish whose context has already ended sends nothing: that is no lost
// acknowledgement, and the Tool can still be finished with a live context.
// (A context derived from c.Context() ends when Execute returns, and one
// bounded by a zero x.Deadline has ended before it starts.)
func TestFinishWithEndedContextSendsNothing(t *testing.T) {
	b := newFakeBrain(t)
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv := <-p.got
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	out := envapi.OK(json.RawMessage(`"done"`))
	_, err := inv.Finish(ended, &out)
	if !errors.Is(err, context.Canceled) || errors.Is(err, envsdk.ErrAckLost) {
		t.Fatalf("Finish with an ended context = %v, want context.Canceled and not ErrAckLost", err)
	}
	if inv.Finished() {
		t.Fatal("Finish with an ended context counts as attempted")
	}
	if n := b.count(envapi.MethodFinish); n != 0 {
		t.Fatalf("finish reached Brain %d times", n)
	}
	if _, err := inv.Finish(context.Background(), &out); err != nil {
		t.Fatalf("Finish with a live context after one that ended = %v, want it sent", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1", n)
	}
}
