package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// lastOutcome sends a turn calling tool and answers the outcome of its
// call.
func lastOutcome(t *testing.T, s *client.Session, tool string) api.Outcome {
	t.Helper()
	if _, err := s.Send(context.Background(), api.UserInput{Message: toolScript(tool)}); err != nil {
		t.Fatal(err)
	}
	ended := ofKind(events(t, s), api.KindToolCallEnded)
	if len(ended) == 0 {
		t.Fatal("no tool call ended")
	}
	return outcomeOf(t, ended[len(ended)-1])
}

// TestHostSuspendAndResume: a host with no call in flight suspends: its
// commands connection closes and stays closed (calls for it fail
// host_not_connected, retryable, without reaching it) until Resume,
// after which the same handlers serve again. A host with a call in
// flight is not suspended and goes on serving it.
func TestHostSuspendAndResume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	release := make(chan struct{})
	inside := make(chan struct{}, 1)
	h.Handle("add", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		calls.Add(1)
		return client.OK(3), nil
	})
	h.Handle("slow", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		inside <- struct{}{}
		<-release
		return client.OK("done"), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "add", "slow")
	if o := lastOutcome(t, s, "add"); o.Status != api.OutcomeOK {
		t.Fatalf("before the suspend: %+v", o)
	}

	// A call in flight keeps the connection.
	sent := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, api.UserInput{Message: toolScript("slow")})
		sent <- err
	}()
	<-inside
	if ok, err := h.Suspend(ctx); err != nil || ok {
		t.Fatalf("Suspend with a call in flight = %v, %v; want false", ok, err)
	}
	close(release)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	ended := ofKind(events(t, s), api.KindToolCallEnded)
	if o := outcomeOf(t, ended[len(ended)-1]); o.Status != api.OutcomeOK {
		t.Fatalf("the call in flight during a refused suspend ended %+v", o)
	}
	if err := h.Err(); err != nil {
		t.Fatalf("after a refused suspend the host stopped: %v", err)
	}

	ok, err := h.Suspend(ctx)
	if err != nil || !ok {
		t.Fatalf("Suspend of an idle host = %v, %v; want true", ok, err)
	}
	if !errors.Is(h.Err(), client.ErrSuspended) {
		t.Fatalf("Err after the suspend = %v, want ErrSuspended", h.Err())
	}
	time.Sleep(300 * time.Millisecond) // longer than the reconnect backoff
	before := calls.Load()
	o := lastOutcome(t, s, "add")
	if o.Status != api.OutcomeFailed || o.Error == nil || o.Error.Code != "host_not_connected" || !o.Error.Retryable {
		t.Fatalf("a call for the suspended host = %+v, want a retryable host_not_connected", o)
	}
	if calls.Load() != before {
		t.Fatal("a suspended host ran a call")
	}

	if err := h.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	if o := lastOutcome(t, s, "add"); o.Status != api.OutcomeOK {
		t.Fatalf("after Resume: %+v", o)
	}
	if err := h.Resume(); err == nil {
		t.Fatal("Resume of a serving host succeeded")
	}
}

// TestHealth: Live and Ready answer nil on a serving server; while it
// drains, Ready answers overloaded and Live still nil.
func TestHealth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, srv := start(t, brain.Config{})
	if err := c.Live(ctx); err != nil {
		t.Fatalf("Live = %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Ready = %v", err)
	}
	srv.Drain()
	var ae *api.ApiError
	if err := c.Ready(ctx); !errors.As(err, &ae) || ae.Code != api.CodeOverloaded {
		t.Fatalf("Ready while draining = %v, want overloaded", err)
	}
	if err := c.Live(ctx); err != nil {
		t.Fatalf("Live while draining = %v", err)
	}
}
