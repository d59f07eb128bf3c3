package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// badOutput answers a result whose output is not JSON.
type badOutput struct{ envsdk.Base }

func (badOutput) Execute(*envsdk.Ctx, *envsdk.Execution) (envapi.Receipt, error) {
	return envapi.Result(json.RawMessage(`{"unterminated":`)), nil
}

// A receipt the provider built wrong is still answered with a
// well-formed response: a failure, not an empty 200 body, and not
// unknown (no finish was ever sent, so nothing may have been committed).
func TestInvalidOutputIsAFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grant bool
	}{{"without a callback", false}, {"with a finish grant", true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBrain(t)
			srv := serve(t, badOutput{}, nil)
			var g *envapi.Grant
			if tc.grant {
				g = b.grant(envapi.ToolMethods()...)
			}
			r := send(t, srv, execute(4, "x", nil, g)).Receipt
			if r.Type != envapi.ReceiptFailure {
				t.Fatalf("a result whose output is not JSON answered %+v, want a failure", r)
			}
			if n := b.count(envapi.MethodFinish); n != 0 {
				t.Errorf("finish reached Brain %d times", n)
			}
		})
	}
}

// A Finish whose outcome cannot be encoded sends nothing: it is no lost
// acknowledgement, and the Tool can still be finished.
func TestFinishEncodeErrorIsNotAckLost(t *testing.T) {
	b := newFakeBrain(t)
	var inv *envsdk.Invocation
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv = <-p.got
	bad := envapi.OK(json.RawMessage(`{"broken":`))
	if _, err := inv.Finish(context.Background(), &bad); err == nil || errors.Is(err, envsdk.ErrAckLost) {
		t.Fatalf("Finish with an outcome that does not encode = %v, want an encoding error that is not ErrAckLost", err)
	}
	if n := b.count(envapi.MethodFinish); n != 0 {
		t.Fatalf("finish reached Brain %d times", n)
	}
	good := envapi.OK(json.RawMessage(`"done"`))
	if _, err := inv.Finish(context.Background(), &good); err != nil {
		t.Fatalf("Finish after a refused encoding = %v, want it sent", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1", n)
	}
}

// invocationKeeper returns and hands out its invocation.
type invocationKeeper struct {
	envsdk.Base
	got chan *envsdk.Invocation
}

func (k *invocationKeeper) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	k.got <- x.Invocation
	return envapi.Returned(nil), nil
}

// lingerer keeps running after its execute was cancelled and then uses
// the operation's context grant.
type lingerer struct {
	envsdk.Base
	started chan struct{}
	emitErr chan error
}

func (l *lingerer) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	l.started <- struct{}{}
	<-c.Context().Done()
	_, err := c.Emit(context.Background(), "after.cancel", map[string]int{"n": 1})
	l.emitErr <- err
	return envapi.Receipt{}, c.Context().Err()
}

// The operation's context closes when the operation is cancelled, not
// only when it returns: a provider still running after Brain's cancel
// can no longer emit through it, and nothing reaches Brain.
func TestContextClosesOnCancel(t *testing.T) {
	b := newFakeBrain(t)
	l := &lingerer{started: make(chan struct{}, 1), emitErr: make(chan error, 1)}
	srv := serve(t, l, &envsdk.Options{Token: token, StopGrace: 5 * time.Second})
	cmd := envapi.Command{Contract: envapi.Contract, Operation: envapi.Operation{SessionID: "ses_1", Environment: "env", Sequence: 5,
		Context: b.grant(envapi.ContextMethods()...),
		Request: envapi.Execute(json.RawMessage(`"x"`), json.RawMessage(`{}`), nil, nil)}}
	body, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan envapi.Receipt, 1)
	go func() { result <- send(t, srv, body).Receipt }()
	<-l.started
	if r := send(t, srv, command(6, envapi.Cancel(5))).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel answered %+v", r)
	}
	if err := <-l.emitErr; !errors.Is(err, envsdk.ErrClosed) {
		t.Errorf("emit through the context of a cancelled operation = %v, want ErrClosed", err)
	}
	if r := <-result; r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeCancelled {
		t.Errorf("cancelled execute answered %+v", r)
	}
	if n := b.count(envapi.MethodEmit); n != 0 {
		t.Errorf("emit reached Brain %d times after the cancel", n)
	}
}

// An outcome that encodes but is not one Brain takes (a failure code that
// is not an identifier, no status) is refused before anything is sent:
// Brain would refuse it, and a refused Finish cannot be made again, so the
// Tool could then only time out. Finish stays available for a good one.
func TestFinishOfAMalformedOutcomeIsNotSent(t *testing.T) {
	b := newFakeBrain(t)
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv := <-p.got
	ctx := context.Background()
	badCode := envapi.ErrorOutcome("no such code!", "the copy failed", false, nil)
	for name, call := range map[string]func() error{
		"finish with a bad code": func() error { _, err := inv.Finish(ctx, &badCode); return err },
		"finish with no status":  func() error { _, err := inv.Finish(ctx, &envapi.Outcome{}); return err },
		"result with a bad code": func() error { _, err := inv.Result(ctx, badCode); return err },
		"returned with no status": func() error {
			_, err := inv.Returned(ctx, &envapi.Outcome{Value: json.RawMessage(`1`)})
			return err
		},
	} {
		err := call()
		var fe *envapi.FieldError
		if !errors.As(err, &fe) || errors.Is(err, envsdk.ErrAckLost) || errors.Is(err, envsdk.ErrRefused) {
			t.Errorf("%s = %v, want a *envapi.FieldError, sent nowhere", name, err)
		}
	}
	for _, m := range []string{envapi.MethodFinish, envapi.MethodResult, envapi.MethodReturned} {
		if n := b.count(m); n != 0 {
			t.Fatalf("%d malformed outcomes reached Brain as %s", n, m)
		}
	}
	good := envapi.ErrorOutcome("copy_failed", "the copy failed", false, nil)
	if _, err := inv.Finish(ctx, &good); err != nil {
		t.Fatalf("Finish after a malformed outcome = %v, want it sent", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1", n)
	}
}
