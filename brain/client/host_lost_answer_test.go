package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// lostOnce takes the first POST to a host route ending in suffix whose
// body holds marker: Brain carries it out and the gateway answers 502 in
// its stead, as a proxy whose upstream's answer did not come back does.
func lostOnce(suffix, marker string) func(r *http.Request) (int, string, bool) {
	var taken atomic.Bool
	return func(r *http.Request) (int, string, bool) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/hosts/") || !strings.HasSuffix(r.URL.Path, suffix) {
			return 0, "", false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		return http.StatusBadGateway, "", bytes.Contains(b, []byte(marker)) && !taken.Swap(true)
	}
}

// loseEach makes g lose the answers that each of losers takes.
func loseEach(g *gateway, losers ...func(r *http.Request) (int, string, bool)) {
	g.losing(func(r *http.Request) (int, string, bool) {
		for _, lose := range losers {
			if st, b, ok := lose(r); ok {
				return st, b, ok
			}
		}
		return 0, "", false
	})
}

// completedTurn sends the turn that calls the host's tool "bg", waits for
// the call to end with the handler's "complete", and answers the session's
// events.
func completedTurn(ctx context.Context, t *testing.T, s *client.Session) []api.Event {
	t.Helper()
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("bg")}); err != nil {
		t.Fatal(err)
	}
	o := outcomeOf(t, waitFor(t, s, api.KindToolCallEnded))
	if o.Status != api.OutcomeOK || string(o.Value) != `"complete"` {
		t.Fatalf("finished with %+v", o)
	}
	return events(t, s)
}

// TestHostLostAnswerIsAskedForAgain: a tool call's result, event and
// returned that Brain recorded but whose answer did not reach the host
// are posted again under the same key and answered with the record the
// first made: the handler sees no error, and each is recorded once.
func TestHostLostAnswerIsAskedForAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		seq uint64
		err error
	}
	answers := make(chan answer, 3)
	h.Handle("bg", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		partial := client.OK("partial")
		seq, err := call.Result(ctx, partial)
		answers <- answer{seq, err}
		seq, err = call.Emit(ctx, "host.progress", map[string]int{"done": 1})
		answers <- answer{seq, err}
		seq, err = call.Returned(ctx, &partial)
		answers <- answer{seq, err}
		return client.OK("complete"), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "bg")
	loseEach(g, lostOnce("/results", `"result"`), lostOnce("/events", `host.progress`), lostOnce("/results", `"returned"`))
	evs := completedTurn(ctx, t, s)
	for i, kind := range []string{api.KindToolResultEmitted, "host.progress", api.KindToolCallReturned} {
		a := <-answers
		if a.err != nil {
			t.Fatalf("%s whose answer was lost once: %v", kind, a.err)
		}
		got := ofKind(evs, kind)
		if len(got) != 1 {
			t.Fatalf("%d %s records after one call whose answer was lost once: %v", len(got), kind, kindsOf(evs))
		}
		if got[0].Sequence != a.seq {
			t.Fatalf("call %d answered sequence %d, its record is %d", i, a.seq, got[0].Sequence)
		}
	}
}

// TestHostUncertainResultKeepsItsKey: a result whose every answer was
// lost fails with an UncertainError carrying its key; sent again with
// that key it is answered with the record the first made, and another
// result under the same key is refused as a conflict. One result is
// recorded.
func TestHostUncertainResultKeepsItsKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type report struct {
		uncertain          error
		again              uint64
		againErr, conflict error
	}
	reports := make(chan report, 1)
	h.Handle("bg", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		var rep report
		defer func() { reports <- rep }()
		g.losing(func(r *http.Request) (int, string, bool) {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/results") {
				return 0, "", false
			}
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			return http.StatusBadGateway, "", bytes.Contains(b, []byte(`"result"`))
		})
		partial := client.OK("partial")
		_, rep.uncertain = call.Result(ctx, partial)
		g.losing(nil)
		ue, ok := errors.AsType[*client.UncertainError](rep.uncertain)
		if !ok {
			return client.OK("complete"), nil
		}
		rep.again, rep.againErr = call.Result(ctx, partial, client.IdempotencyKey(ue.Key))
		_, rep.conflict = call.Result(ctx, client.OK("other"), client.IdempotencyKey(ue.Key))
		return client.OK("complete"), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "bg")
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("bg")}); err != nil {
		t.Fatal(err)
	}
	rep := <-reports
	ue, ok := errors.AsType[*client.UncertainError](rep.uncertain)
	if !ok || ue.Key == "" {
		t.Fatalf("result whose every answer was lost = %v, want an UncertainError with its key", rep.uncertain)
	}
	if rep.againErr != nil {
		t.Fatalf("the result sent again with its key: %v", rep.againErr)
	}
	if ae, ok := errors.AsType[*api.ApiError](rep.conflict); !ok || ae.Code != api.CodeConflict {
		t.Fatalf("another result under the same key = %v, want conflict", rep.conflict)
	}
	evs := events(t, s)
	got := ofKind(evs, api.KindToolResultEmitted)
	if len(got) != 1 || got[0].Sequence != rep.again {
		t.Fatalf("results %v after one result sent under one key, the one sent again answered %d", got, rep.again)
	}
}

// TestHostLostCallAnswerIsAskedForAgain: a service call that records (an
// event, a result) made with ToolCall.Call, recorded by Brain but whose
// answer did not reach the host, is posted again under the same key and
// answered with the record the first made: each is recorded once.
func TestHostLostCallAnswerIsAskedForAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		out []byte
		err error
	}
	answers := make(chan answer, 2)
	h.Handle("bg", func(ctx context.Context, call *client.ToolCall) (api.Outcome, error) {
		out, err := call.Call(ctx, "emit", []byte(`{"event_type":"host.progress","data":{"done":1}}`))
		answers <- answer{out, err}
		out, err = call.Call(ctx, "result", []byte(`{"status":"ok","value":"partial"}`))
		answers <- answer{out, err}
		return client.OK("complete"), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "bg")
	loseEach(g, lostOnce("/call", `host.progress`), lostOnce("/call", `"result"`))
	evs := completedTurn(ctx, t, s)
	for _, kind := range []string{"host.progress", api.KindToolResultEmitted} {
		a := <-answers
		if a.err != nil {
			t.Fatalf("%s whose answer was lost once: %v", kind, a.err)
		}
		got := ofKind(evs, kind)
		if len(got) != 1 {
			t.Fatalf("%d %s records after one call whose answer was lost once: %v", len(got), kind, kindsOf(evs))
		}
		if string(a.out) != fmt.Sprint(got[0].Sequence) {
			t.Fatalf("%s answered %s, its record is %d", kind, a.out, got[0].Sequence)
		}
	}
}
