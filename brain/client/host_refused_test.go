package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestHostRefusedOutcomeFails: a handler whose outcome Brain refuses (a
// zero Outcome, an error code that is not an identifier, a value larger
// than a request may be) ends its call at once as failed invalid_output,
// naming why, instead of leaving it open until its deadline.
func TestHostRefusedOutcomeFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const maxTool = 10 * time.Second
	c, _ := start(t, brain.Config{MaxRequestBytes: 64 << 10, Limits: brain.Limits{MaxTool: maxTool}})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]api.Outcome{
		"zero":    {},
		"badcode": client.Fail("not an identifier", "the code has spaces"),
		"huge":    client.OK(strings.Repeat("x", 128<<10)),
	}
	for name, o := range outcomes {
		h.Handle(name, func(context.Context, *client.ToolCall) (api.Outcome, error) { return o, nil })
	}
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	for name := range outcomes {
		t.Run(name, func(t *testing.T) {
			s := hostSession(t, c, h, name)
			began := time.Now()
			if _, err := s.Send(ctx, api.UserInput{Message: toolScript(name)}); err != nil {
				t.Fatal(err)
			}
			o := outcomeOf(t, ofKind(events(t, s), api.KindToolCallEnded)[0])
			if o.Status != api.OutcomeFailed || o.Error == nil || o.Error.Code != "invalid_output" || !strings.Contains(o.Error.Message, "refused") {
				t.Fatalf("outcome %+v (error %+v) after %v, want failed invalid_output", o, o.Error, time.Since(began))
			}
			if d := time.Since(began); d > maxTool/2 {
				t.Fatalf("the call took %v to end", d)
			}
		})
	}
}

// TestHostCallBeforeHandle: Host connects at once, so a call can arrive
// before the program gave its handler (a host process that resumes while
// sessions are busy). The call waits for Handle and is served, instead of
// failing unknown_tool.
func TestHostCallBeforeHandle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "late")
	if _, err := s.Submit(ctx, api.UserInput{Message: toolScript("late")}); err != nil {
		t.Fatal(err)
	}
	// The call has reached the host's connection; its handler comes a
	// moment later.
	for len(ofKind(events(t, s), api.KindToolCallStarted)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the tool call never started")
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond)
	h.Handle("late", func(context.Context, *client.ToolCall) (api.Outcome, error) { return client.OK("served"), nil })
	for len(ofKind(events(t, s), api.KindToolCallEnded)) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the tool call never ended")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if o := outcomeOf(t, ofKind(events(t, s), api.KindToolCallEnded)[0]); o.Status != api.OutcomeOK || string(o.Value) != `"served"` {
		t.Fatalf("outcome %+v (error %+v), want ok \"served\"", o, o.Error)
	}
}

// TestHostFinishNotAnsweredIsPostedAgain: a handler's finish that a proxy
// in front of Brain answered 502 without relaying it (its upstream was
// unreachable for a moment) is posted again, so the call ends with the
// handler's outcome instead of staying open until its deadline.
func TestHostFinishNotAnsweredIsPostedAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	var refused atomic.Int32
	g.refusing(func(r *http.Request) bool {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/results") {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		return bytes.Contains(b, []byte(`"finish"`)) && refused.Add(1) <= 2
	})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Handle("echo", func(context.Context, *client.ToolCall) (api.Outcome, error) { return client.OK("done"), nil })
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "echo")
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("echo")}); err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, ofKind(events(t, s), api.KindToolCallEnded)[0]); o.Status != api.OutcomeOK || string(o.Value) != `"done"` {
		t.Fatalf("outcome %+v (error %+v), want ok \"done\"", o, o.Error)
	}
	if n := refused.Load(); n < 3 {
		t.Fatalf("the finish was posted %d times, want the two refused and one more", n)
	}
}

// TestHostRegistrationHonoursContext: while one Host call waits for its
// registration's answer, another Host call with a context that ends
// returns with the context's error at once instead of waiting for the
// first; the first is answered as usual.
func TestHostRegistrationHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	release := g.holding()
	defer release()
	arrived := make(chan struct{})
	var once sync.Once
	g.losing(func(r *http.Request) (int, string, bool) {
		// The gateway relays the registration, and holds Brain's answer.
		if r.Method != http.MethodPost || r.URL.Path != "/v1/hosts" {
			return 0, "", false
		}
		once.Do(func() { close(arrived) })
		return http.StatusBadGateway, "", true
	})
	first := make(chan error, 1)
	go func() {
		_, err := c.Host(ctx)
		first <- err
	}()
	<-arrived
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	second := make(chan error, 1)
	go func() {
		_, err := c.Host(short)
		second <- err
	}()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Host with an ended context = %v, want its deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Host waited for another call's registration past the end of its context")
	}
	release()
	if err := <-first; err == nil {
		t.Fatal("the registration whose answer a proxy replaced with 502 started a host")
	}
}
