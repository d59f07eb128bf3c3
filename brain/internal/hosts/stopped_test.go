package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// backgroundCall is the service table of one tool call as the session
// engine keeps it once the call returned: closing the call (a finish,
// or a stop) closes Done and ends the call's context in one step, under
// the lock the registry's lock stands in for here.
type backgroundCall struct {
	session.Services
	r      *Registry
	done   chan struct{}
	cancel context.CancelCauseFunc
}

func (b *backgroundCall) Done() <-chan struct{} { return b.done }

func (b *backgroundCall) Returned(context.Context, *api.Outcome) (uint64, error) { return 2, nil }

// Finish closes the call, then ends its context, as the engine does for
// a call whose execute is no longer in flight.
func (b *backgroundCall) Finish(context.Context, *api.Outcome) (uint64, error) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	select {
	case <-b.done:
		return 0, session.ErrExecutionClosed
	default:
	}
	close(b.done)
	b.cancel(nil)
	return 3, nil
}

// Call serves finish, the one service method these calls use.
func (b *backgroundCall) Call(ctx context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	if method != envapi.MethodFinish {
		return nil, session.ErrNotGranted
	}
	seq, err := b.Finish(ctx, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(seq)
}

// stop ends the call's context first and then closes it, as an
// interrupt does; a cancel operation follows.
func (b *backgroundCall) stop() {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	b.cancel(session.ErrCancelled)
	close(b.done)
}

// startBackground delivers tool call seq to host id, lets the host post
// returned, and answers the call once its delivery answered returned.
func startBackground(t *testing.T, r *Registry, conn *Conn, id string, seq uint64) *backgroundCall {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	b := &backgroundCall{r: r, done: make(chan struct{}), cancel: cancel}
	op := session.Operation{
		Operation: envapi.Operation{
			SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Environment: "h", Sequence: seq,
			Request: envapi.Execute(json.RawMessage(`{}`), json.RawMessage(`{}`), nil, nil),
		},
		Declaration: api.Environment{Name: "h", Driver: api.DriverHost, HostID: id},
		Execution:   b,
		Tool:        "t",
	}
	out := make(chan delivered, 1)
	go func() {
		rc, err := r.Deliver(ctx, op)
		out <- delivered{rc, err}
	}()
	(<-conn.Frames()).Wrote(nil)
	if _, err := r.Update(context.Background(), id, api.HostResult{SessionID: op.SessionID, Sequence: seq, Update: api.ToolExecutionUpdate{Type: api.UpdateReturned}}); err != nil {
		t.Fatal(err)
	}
	if d := receipt(t, out); d.err != nil || d.rc.Type != envapi.ReceiptReturned {
		t.Fatalf("receipt %+v err %v, want returned", d.rc, d.err)
	}
	return b
}

// held answers how many commands host id still holds, once every call
// that closed was let go.
func held(t *testing.T, r *Registry, id string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		r.mu.Lock()
		h := r.hosts[id]
		open, stopped := len(h.outstanding), len(h.stopped)
		r.mu.Unlock()
		if open == 0 {
			return stopped
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commands still outstanding", open)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFinishedBackgroundCallsLeaveNothing: a call that returned and that
// its host then finished (by an update or a service call) is forgotten, with the session state it refers
// to, rather than kept for a cancel operation that never comes; one that
// is stopped is kept until its cancel operation is written, and then
// forgotten too.
func TestFinishedBackgroundCallsLeaveNothing(t *testing.T) {
	r := open(t, Config{Dir: t.TempDir()})
	reg, conn := connected(t, r)
	for seq := uint64(1); seq <= 20; seq++ {
		startBackground(t, r, conn, reg.HostID, seq)
		var err error
		if seq%2 == 0 {
			_, err = r.Update(context.Background(), reg.HostID, api.HostResult{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: seq, Update: api.ToolExecutionUpdate{Type: api.UpdateFinish}})
		} else {
			_, err = r.ServiceCall(context.Background(), reg.HostID, api.HostServiceCall{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: seq, Call: api.ServiceCall{Method: envapi.MethodFinish}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := held(t, r, reg.HostID); n != 0 {
		t.Fatalf("%d finished calls are still held by the host's connection", n)
	}

	b := startBackground(t, r, conn, reg.HostID, 100)
	b.stop()
	if n := held(t, r, reg.HostID); n != 1 {
		t.Fatalf("a stopped call: %d held, want 1 until its cancel operation", n)
	}
	// The transport writes the cancel_tool command; the cancel operation
	// is answered once it did.
	written := make(chan []byte, 1)
	go func() {
		f := <-conn.Frames()
		f.Wrote(nil)
		written <- f.Data
	}()
	rc, err := r.Deliver(context.Background(), cancelOp(reg.HostID, 101, 100))
	if err != nil || rc.Type != envapi.ReceiptAccepted {
		t.Fatalf("cancel receipt %+v err %v", rc, err)
	}
	var cmd api.HostCommand
	if err := json.Unmarshal(<-written, &cmd); err != nil || cmd.Operation.Type != api.HostCancelTool || cmd.Operation.TargetSequence != 100 {
		t.Fatalf("frame %+v (%v), want cancel_tool of 100", cmd, err)
	}
	if n := held(t, r, reg.HostID); n != 0 {
		t.Fatalf("%d calls held after the cancel was written", n)
	}
	if _, err := r.Update(context.Background(), reg.HostID, api.HostResult{SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 100, Update: api.ToolExecutionUpdate{Type: api.UpdateFinish}}); !errors.Is(err, session.ErrExecutionClosed) {
		t.Fatalf("finish of the cancelled call = %v, want refused", err)
	}
}

// drop ends the call's context with cause and closes it, as the session
// does when it lets its calls go without recording anything: no cancel
// operation follows.
func (b *backgroundCall) drop(cause error) {
	b.r.mu.Lock()
	defer b.r.mu.Unlock()
	b.cancel(cause)
	close(b.done)
}
