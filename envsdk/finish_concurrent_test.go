package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

type refuseKey struct{}

// heldRefusal is a client whose calls made under refuseKey wait until
// released and are then refused at their dial, as an unreachable Brain
// refuses them; every other call goes through.
type heldRefusal struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldRefusal() *heldRefusal {
	return &heldRefusal{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldRefusal) client() *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Context().Value(refuseKey{}) == nil {
			return http.DefaultTransport.RoundTrip(r)
		}
		h.once.Do(func() { close(h.entered) })
		<-h.release
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})}
}

// TestSecondFinishWaitsForAnUnsentFirst: a Finish called while another is
// on its way waits for that one's outcome. When the first never reached
// Brain, nothing was attempted, and the second is sent; it is not refused
// as a second finish.
func TestSecondFinishWaitsForAnUnsentFirst(t *testing.T) {
	b := newFakeBrain(t)
	h := newHeldRefusal()
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, &envsdk.Options{Token: token, Client: h.client()})
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv := <-p.got

	first := make(chan error, 1)
	go func() {
		out := envapi.OK(json.RawMessage(`"first"`))
		_, err := inv.Finish(context.WithValue(context.Background(), refuseKey{}, true), &out)
		first <- err
	}()
	<-h.entered
	second := make(chan error, 1)
	go func() {
		out := envapi.OK(json.RawMessage(`"second"`))
		_, err := inv.Finish(context.Background(), &out)
		second <- err
	}()
	// The second Finish is given time to meet the first on its way.
	time.Sleep(50 * time.Millisecond)
	close(h.release)

	if err := <-first; !errors.Is(err, envsdk.ErrNotSent) {
		t.Fatalf("the first Finish = %v, want ErrNotSent", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the Finish called while an unsent one was on its way = %v, want it sent", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1", n)
	}
	if !inv.Finished() {
		t.Fatal("the sent Finish does not count as attempted")
	}
}

// finishingInBackground starts its own Finish of its invocation and
// answers a result once that Finish is on its way.
type finishingInBackground struct {
	envsdk.Base
	h   *heldRefusal
	own chan error
}

func (f *finishingInBackground) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	go func() {
		out := envapi.OK(json.RawMessage(`"own"`))
		_, err := x.Invocation.Finish(context.WithValue(context.Background(), refuseKey{}, true), &out)
		f.own <- err
	}()
	<-f.h.entered
	return envsdk.Output("result")
}

// TestResultFinishedWhenOwnFinishNeverLeft: an Execute that answers a
// result while its own Finish is on its way leaves the Tool unfinished if
// that Finish never reaches Brain. The automatic finish waits for its
// outcome and, since nothing was sent, finishes the result itself.
func TestResultFinishedWhenOwnFinishNeverLeft(t *testing.T) {
	b := newFakeBrain(t)
	h := newHeldRefusal()
	p := &finishingInBackground{h: h, own: make(chan error, 1)}
	srv := serve(t, p, &envsdk.Options{Token: token, Client: h.client()})
	answered := make(chan envapi.Receipt, 1)
	go func() { answered <- send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt }()
	<-h.entered
	// The execute is given time to answer its result while its own
	// Finish is on its way.
	time.Sleep(50 * time.Millisecond)
	close(h.release)

	if err := <-p.own; !errors.Is(err, envsdk.ErrNotSent) {
		t.Fatalf("the provider's own Finish = %v, want ErrNotSent", err)
	}
	if r := <-answered; r.Type != envapi.ReceiptResult {
		t.Fatalf("execute answered %+v, want its result", r)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1: the result was never finished", n)
	}
}
