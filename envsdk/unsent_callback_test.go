package envsdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// closedAddress answers a loopback address nothing listens on: a dial to
// it is refused.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// unreachableInvocation is the invocation of an execute whose callback
// grant names addr.
func unreachableInvocation(t *testing.T, addr string, opts *envsdk.Options) *envsdk.Invocation {
	t.Helper()
	g := &envapi.Grant{URL: "http://" + addr + "/call", Token: "cb-token", Methods: envapi.ToolMethods()}
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, opts)
	if r := send(t, srv, execute(2, "x", nil, g)).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v, want returned", r)
	}
	return <-p.got
}

// TestUnreachableCallbackIsNotSent: a call whose every connection to Brain
// was refused never reached it. It is a definite failure matching
// ErrNotSent, not a lost acknowledgement nor a refusal; a Finish that never
// reached Brain was not attempted, and finishes the Tool once Brain can be
// reached.
func TestUnreachableCallbackIsNotSent(t *testing.T) {
	addr := closedAddress(t)
	inv := unreachableInvocation(t, addr, nil)
	ctx := context.Background()

	if _, err := inv.Emit(ctx, "x", nil); !errors.Is(err, envsdk.ErrNotSent) || errors.Is(err, envsdk.ErrRefused) {
		t.Errorf("emit to a refused address = %v, want ErrNotSent and not ErrRefused", err)
	}
	out := envapi.OK(json.RawMessage(`"done"`))
	_, err := inv.Finish(ctx, &out)
	if err == nil || errors.Is(err, envsdk.ErrAckLost) || errors.Is(err, envsdk.ErrRefused) || !errors.Is(err, envsdk.ErrNotSent) {
		t.Fatalf("Finish to a refused address = %v, want ErrNotSent, not ErrAckLost nor ErrRefused", err)
	}
	if inv.Finished() {
		t.Fatal("a Finish that never reached Brain counts as attempted")
	}

	// Brain is back on the same address: the Tool can still be finished.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Logf("the address was taken meanwhile (%v); the second Finish is not tried", err)
		return
	}
	b := newFakeBrain(t)
	back := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(b.serve)}}
	back.Start()
	t.Cleanup(back.Close)
	if _, err := inv.Finish(ctx, &out); err != nil {
		t.Fatalf("Finish once Brain is reachable = %v, want its sequence", err)
	}
	if n := b.count(envapi.MethodFinish); n != 1 {
		t.Fatalf("finish reached Brain %d times, want 1", n)
	}
}

// TestUnreachableAutomaticFinishIsAFailure: when every connection of the
// automatic finish of a result was refused, nothing was committed: the
// execute answers a failure, not unknown.
func TestUnreachableAutomaticFinishIsAFailure(t *testing.T) {
	g := &envapi.Grant{URL: "http://" + closedAddress(t) + "/call", Token: "cb-token", Methods: envapi.ToolMethods()}
	srv := serve(t, newTestProvider(), nil)
	r := send(t, srv, execute(1, "echo", nil, g)).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeEnvironmentFailed {
		t.Fatalf("execute whose finish never reached Brain answered %+v, want the failure %s", r, envapi.CodeEnvironmentFailed)
	}
	if !strings.Contains(r.Message, "never reached Brain") {
		t.Errorf("the failure does not say the finish never reached Brain: %s", r.Message)
	}
}

// cancellingContext sends its execute's cancel to the provider the first
// time its Err is asked for.
type cancellingContext struct {
	context.Context
	once   sync.Once
	cancel func()
}

func (c *cancellingContext) Err() error {
	c.once.Do(c.cancel)
	return c.Context.Err()
}

// TestFinishCancelledBeforeSendIsClosed: a cancel that reaches the provider
// while Finish is getting ready to send leaves nothing sent: Finish fails
// with ErrClosed and the cause, not with a lost acknowledgement.
func TestFinishCancelledBeforeSendIsClosed(t *testing.T) {
	b := newFakeBrain(t)
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, nil)
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv := <-p.got
	ctx := &cancellingContext{Context: context.Background(), cancel: func() {
		if r := send(t, srv, command(3, envapi.Cancel(2))).Receipt; r.Type != envapi.ReceiptAccepted {
			t.Errorf("cancel answered %+v", r)
		}
	}}
	out := envapi.OK(json.RawMessage(`"done"`))
	_, err := inv.Finish(ctx, &out)
	if !errors.Is(err, envsdk.ErrClosed) || !errors.Is(err, envsdk.ErrCancelled) || errors.Is(err, envsdk.ErrAckLost) {
		t.Fatalf("Finish cancelled before it was sent = %v, want ErrClosed and ErrCancelled, not ErrAckLost", err)
	}
	if n := b.count(envapi.MethodFinish); n != 0 {
		t.Fatalf("finish reached Brain %d times", n)
	}
}

// closeRecorder is a response body that records whether it was closed.
type closeRecorder struct {
	io.ReadCloser
	closed *atomic.Bool
}

func (c closeRecorder) Close() error {
	c.closed.Store(true)
	return c.ReadCloser.Close()
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAnswerClosedWhenCallEndsAsItArrives: a callback whose context ends
// just as Brain's answer arrives still closes that answer's body, so the
// connection is released to the client's transport.
func TestAnswerClosedWhenCallEndsAsItArrives(t *testing.T) {
	b := newFakeBrain(t)
	var closed atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && r.Context().Value(answerKey{}) != nil {
			resp.Body = closeRecorder{ReadCloser: resp.Body, closed: &closed}
			cancel()
		}
		return resp, err
	})}
	p := &invocationKeeper{got: make(chan *envsdk.Invocation, 1)}
	srv := serve(t, p, &envsdk.Options{Token: token, Client: client})
	if r := send(t, srv, execute(2, "x", nil, b.grant(envapi.ToolMethods()...))).Receipt; r.Type != envapi.ReceiptReturned {
		t.Fatalf("execute answered %+v", r)
	}
	inv := <-p.got
	_, _ = inv.Emit(context.WithValue(ctx, answerKey{}, true), "x", nil)
	if b.count(envapi.MethodEmit) != 1 {
		t.Fatal("the emit did not reach Brain")
	}
	if !closed.Load() {
		t.Fatal("the body of Brain's answer was never closed")
	}
}

type answerKey struct{}

// TestCallEndedBetweenRefusedDialsIsNotSent: a call whose context ends
// after its connections were refused, before it connected, never reached
// Brain either: its error matches ErrNotSent and the context's error, and a
// Finish ended so is not attempted.
func TestCallEndedBetweenRefusedDialsIsNotSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dials atomic.Int64
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil && dials.Add(1) == 2 {
			cancel() // before the call dials again
		}
		return resp, err
	})}
	inv := unreachableInvocation(t, closedAddress(t), &envsdk.Options{Token: token, Client: client})
	out := envapi.OK(json.RawMessage(`"done"`))
	_, err := inv.Finish(ctx, &out)
	if !errors.Is(err, envsdk.ErrNotSent) || !errors.Is(err, context.Canceled) || errors.Is(err, envsdk.ErrAckLost) {
		t.Fatalf("Finish ended between refused dials = %v, want ErrNotSent and context.Canceled, not ErrAckLost", err)
	}
	if inv.Finished() {
		t.Fatal("a Finish that never reached Brain counts as attempted")
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2", n)
	}
}

// A call whose context ends while its connection is still being opened
// never wrote a byte: with a transport that reports its connections
// (net/http's), the call fails with ErrNotSent and Finish stays
// available. Through a transport that does not report them nothing can
// be told, and the outcome stays uncertain.
func TestCallEndedWhileDialingIsNotSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dialing sync.Once
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	client := &http.Client{Transport: &http.Transport{DialContext: func(dctx context.Context, _, _ string) (net.Conn, error) {
		dialing.Do(cancel) // the call's context ends while it dials
		select {
		case <-dctx.Done():
			return nil, dctx.Err()
		case <-stop:
			return nil, errors.New("the test is over")
		}
	}}}
	inv := unreachableInvocation(t, closedAddress(t), &envsdk.Options{Token: token, Client: client})
	out := envapi.OK(json.RawMessage(`"done"`))
	_, err := inv.Finish(ctx, &out)
	if !errors.Is(err, envsdk.ErrNotSent) || !errors.Is(err, context.Canceled) || errors.Is(err, envsdk.ErrAckLost) {
		t.Fatalf("Finish ended while dialing = %v, want ErrNotSent and context.Canceled, not ErrAckLost", err)
	}
	if inv.Finished() {
		t.Fatal("a Finish that never reached Brain counts as attempted")
	}

	// A transport of its own says nothing of its connections.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	opaque := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		cancel2()
		<-r.Context().Done()
		return nil, r.Context().Err()
	})}
	inv2 := unreachableInvocation(t, closedAddress(t), &envsdk.Options{Token: token, Client: opaque})
	if _, err := inv2.Finish(ctx2, &out); !errors.Is(err, envsdk.ErrAckLost) || errors.Is(err, envsdk.ErrNotSent) {
		t.Fatalf("Finish ended inside an opaque transport = %v, want ErrAckLost", err)
	}
}
