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

// backgroundTool answers returned and finishes its Tool in the background
// once gate is closed, with a context of its own, as a plain provider
// does; finished receives what Finish answered.
type backgroundTool struct {
	envsdk.Base
	gate     chan struct{}
	finished chan error
}

func newBackgroundTool() *backgroundTool {
	return &backgroundTool{gate: make(chan struct{}), finished: make(chan error, 1)}
}

func (p *backgroundTool) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	go func() {
		<-p.gate
		out := envapi.OK(json.RawMessage(`"done"`))
		_, err := x.Invocation.Finish(context.Background(), &out)
		p.finished <- err
	}()
	return envapi.Returned(nil), nil
}

// A Tool that answered returned is no longer open once Brain cancelled it
// or its deadline passed: its grant is revoked, so a Finish that follows
// fails without being sent, and Brain never sees an ok outcome after the
// cancel it was told was accepted.
func TestFinishAfterStopOfReturnedToolIsNotSent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline int64
		want     error
	}{
		{name: "cancel", deadline: 60_000, want: envsdk.ErrCancelled},
		{name: "deadline", deadline: 100, want: envsdk.ErrDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBrain(t)
			p := newBackgroundTool()
			srv := serve(t, p, nil)
			ms := tc.deadline
			if r := send(t, srv, execute(4, "bg", &ms, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
				t.Fatalf("execute answered %+v, want returned", r)
			}
			if tc.name == "cancel" {
				if r := send(t, srv, command(5, envapi.Cancel(4))).Receipt; r.Type != envapi.ReceiptAccepted {
					t.Fatalf("cancel answered %+v, want accepted", r)
				}
			} else {
				time.Sleep(time.Duration(ms)*time.Millisecond + 50*time.Millisecond)
			}
			close(p.gate)
			err := <-p.finished
			if !errors.Is(err, envsdk.ErrClosed) || !errors.Is(err, tc.want) {
				t.Errorf("Finish after the %s = %v, want ErrClosed and %v", tc.name, err, tc.want)
			}
			if n := b.count(envapi.MethodFinish); n != 0 {
				t.Errorf("finish reached Brain %d times after the %s", n, tc.name)
			}
		})
	}
}

// watcher answers returned and watches x.Context() in the background:
// alive receives the context's error once gate is closed (after the
// answer), ended its cause once it ends.
type watcher struct {
	envsdk.Base
	receipt func(x *envsdk.Execution) envapi.Receipt
	gate    chan struct{}
	alive   chan error
	ended   chan error
}

func newWatcher() *watcher {
	return &watcher{gate: make(chan struct{}), alive: make(chan error, 1), ended: make(chan error, 1)}
}

func (w *watcher) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	go func() {
		<-w.gate
		w.alive <- x.Context().Err()
		<-x.Context().Done()
		w.ended <- context.Cause(x.Context())
	}()
	if w.receipt != nil {
		return w.receipt(x), nil
	}
	return envapi.Returned(nil), nil
}

// cause waits for the watcher's context to end and answers its cause.
func (w *watcher) cause(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.ended:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the Tool's context did not end")
		return nil
	}
}

// The context of a Tool that answered returned lives on after the answer
// and ends when Brain cancels the Tool (cause ErrCancelled), when its
// deadline passes (ErrDeadline), and when its binding is torn down or
// detached: the work that goes on after returned learns that it must
// stop.
func TestReturnedToolContextEndsWhenStopped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline int64
		stop     func(t *testing.T, send func(body []byte) envapi.Receipt)
		want     error
	}{
		{name: "cancel", deadline: 60_000, want: envsdk.ErrCancelled, stop: func(t *testing.T, send func([]byte) envapi.Receipt) {
			if r := send(command(5, envapi.Cancel(4))); r.Type != envapi.ReceiptAccepted {
				t.Fatalf("cancel answered %+v, want accepted", r)
			}
		}},
		{name: "deadline", deadline: 200, want: envsdk.ErrDeadline, stop: func(*testing.T, func([]byte) envapi.Receipt) {}},
		{name: "teardown", deadline: 60_000, stop: func(t *testing.T, send func([]byte) envapi.Receipt) {
			if r := send(command(5, envapi.Teardown())); r.Type != envapi.ReceiptAccepted {
				t.Fatalf("teardown answered %+v, want accepted", r)
			}
		}},
		{name: "detach", deadline: 60_000, stop: func(t *testing.T, send func([]byte) envapi.Receipt) {
			if r := send(command(5, envapi.Detach())); r.Type != envapi.ReceiptAccepted {
				t.Fatalf("detach answered %+v, want accepted", r)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBrain(t)
			w := newWatcher()
			srv := serve(t, w, nil)
			ms := tc.deadline
			if r := send(t, srv, execute(4, "watch", &ms, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
				t.Fatalf("execute answered %+v, want returned", r)
			}
			close(w.gate)
			if err := <-w.alive; err != nil {
				t.Fatalf("the Tool's context ended when its execute answered returned: %v", err)
			}
			tc.stop(t, func(body []byte) envapi.Receipt { return send(t, srv, body).Receipt })
			cause := w.cause(t)
			if tc.want != nil && !errors.Is(cause, tc.want) {
				t.Errorf("the Tool's context ended with %v, want %v", cause, tc.want)
			}
			if errors.Is(cause, envsdk.ErrCancelled) != (tc.name == "cancel") {
				t.Errorf("the Tool's context ended with %v after a %s", cause, tc.name)
			}
		})
	}
}

// cancelingWatcher is a watcher that also implements Canceler.
type cancelingWatcher struct {
	*watcher
	cancelled chan uint64
}

func (w cancelingWatcher) Cancel(_ *envsdk.Ctx, target uint64) error {
	w.cancelled <- target
	return nil
}

// A provider that implements Canceler still has its Cancel called for a
// Tool that answered returned, and the Tool's context ends as well.
func TestCancelerSeesCancelOfReturnedTool(t *testing.T) {
	b := newFakeBrain(t)
	w := cancelingWatcher{watcher: newWatcher(), cancelled: make(chan uint64, 1)}
	srv := serve(t, w, nil)
	if r := send(t, srv, execute(4, "watch", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v, want returned", r)
	}
	close(w.gate)
	if err := <-w.alive; err != nil {
		t.Fatalf("the Tool's context ended when its execute answered returned: %v", err)
	}
	if r := send(t, srv, command(5, envapi.Cancel(4))).Receipt; r.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel answered %+v, want accepted", r)
	}
	if got := <-w.cancelled; got != 4 {
		t.Errorf("Cancel called for %d, want 4", got)
	}
	if cause := w.cause(t); !errors.Is(cause, envsdk.ErrCancelled) {
		t.Errorf("the Tool's context ended with %v, want ErrCancelled", cause)
	}
}

// The work context ends with the Tool: once its Finish was answered, and
// when Execute answers anything but returned. A cancel of the finished
// Tool, or of a sequence never executed, is accepted and stops nothing.
func TestToolContextEndsWithTheTool(t *testing.T) {
	t.Run("finished", func(t *testing.T) {
		b := newFakeBrain(t)
		w := newWatcher()
		srv := serve(t, w, nil)
		got := make(chan *envsdk.Invocation, 1)
		w.receipt = func(x *envsdk.Execution) envapi.Receipt { got <- x.Invocation; return envapi.Returned(nil) }
		if r := send(t, srv, execute(4, "watch", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
			t.Fatalf("execute answered %+v, want returned", r)
		}
		inv := <-got
		close(w.gate)
		if err := <-w.alive; err != nil {
			t.Fatalf("the Tool's context ended before it finished: %v", err)
		}
		out := envapi.OK(json.RawMessage(`"done"`))
		if _, err := inv.Finish(context.Background(), &out); err != nil {
			t.Fatalf("Finish: %v", err)
		}
		if cause := w.cause(t); errors.Is(cause, envsdk.ErrCancelled) || errors.Is(cause, envsdk.ErrDeadline) {
			t.Errorf("the finished Tool's context ended with %v", cause)
		}
		for _, target := range []uint64{4, 40} {
			if r := send(t, srv, command(5+target, envapi.Cancel(target))).Receipt; r.Type != envapi.ReceiptAccepted {
				t.Errorf("cancel of sequence %d answered %+v, want accepted", target, r)
			}
		}
		if n := b.count(envapi.MethodFinish); n != 1 {
			t.Errorf("finish reached Brain %d times, want 1", n)
		}
	})
	t.Run("result", func(t *testing.T) {
		b := newFakeBrain(t)
		w := newWatcher()
		w.receipt = func(*envsdk.Execution) envapi.Receipt { return envapi.Result(json.RawMessage(`"now"`)) }
		srv := serve(t, w, nil)
		if r := send(t, srv, execute(4, "watch", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptResult {
			t.Fatalf("execute answered %+v, want result", r)
		}
		close(w.gate)
		<-w.alive
		if cause := w.cause(t); errors.Is(cause, envsdk.ErrCancelled) || errors.Is(cause, envsdk.ErrDeadline) {
			t.Errorf("the context of a Tool answered with a result ended with %v", cause)
		}
	})
}

// errsAtStop reports the errors of both contexts of an execute once its
// operation context ended.
type errsAtStop struct {
	envsdk.Base
	errs chan [2]error
}

func (p *errsAtStop) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	<-c.Context().Done()
	<-x.Context().Done()
	p.errs <- [2]error{c.Context().Err(), x.Context().Err()}
	return envapi.Receipt{}, c.Context().Err()
}

// At the deadline both contexts of an execute end with
// context.DeadlineExceeded, which providers test to tell a timeout from a
// cancel, and the answer is timeout.
func TestDeadlineEndsBothContextsAsExceeded(t *testing.T) {
	p := &errsAtStop{errs: make(chan [2]error, 1)}
	srv := serve(t, p, nil)
	for seq := uint64(1); seq <= 10; seq++ {
		ms := int64(5)
		if r := send(t, srv, execute(seq, "x", &ms, nil)).Receipt; r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
			t.Fatalf("execute past its deadline answered %+v, want timeout", r)
		}
		if errs := <-p.errs; !errors.Is(errs[0], context.DeadlineExceeded) || !errors.Is(errs[1], context.DeadlineExceeded) {
			t.Fatalf("at the deadline c.Context().Err() = %v, x.Context().Err() = %v; want context.DeadlineExceeded for both", errs[0], errs[1])
		}
	}
}
