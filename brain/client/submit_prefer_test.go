package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// TestSubmitBehindAProxyThatDropsPrefer: a proxy in front of Brain that
// drops the Prefer header makes Brain run a submission as a synchronous
// message, answered with the session's summary once the turn ended.
// Submit answers the Receipt of that turn all the same (its turn_started
// sequence), or an UncertainError with its key when the turn cannot be
// found; Send with a cancellable ctx (which submits) answers the turn's
// summary, and a turn that failed fails Submit with its failure code.
func TestSubmitBehindAProxyThatDropsPrefer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := braintest.Start(t, braintest.Options{Token: "tok"})
	g := newGateway(t, b.URL)
	var dropped atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Prefer") != "" {
			dropped.Add(1)
			r.Header.Del("Prefer")
		}
		g.ServeHTTP(w, r)
	}))
	defer front.Close()
	c, err := client.New(front.URL, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, msg := range []string{"first", "second"} {
		rec, err := s.Submit(ctx, api.UserInput{Message: msg})
		if err != nil {
			t.Fatalf("Submit %q behind a proxy that drops Prefer: %v", msg, err)
		}
		if rec.SessionID != s.ID || rec.Sequence <= last {
			t.Fatalf("Submit %q = %+v, want a turn of session %s after sequence %d", msg, rec, s.ID, last)
		}
		last = rec.Sequence
		started, ended := false, false
		for ev, err := range s.Events(ctx, rec.Sequence-1) {
			if err != nil {
				t.Fatal(err)
			}
			var d struct {
				Input    api.UserInput `json:"input"`
				Sequence uint64        `json:"sequence"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			switch {
			case ev.Sequence == rec.Sequence:
				started = ev.EventType == api.KindTurnStarted && d.Input.Message == msg
			case ev.EventType == api.KindTurnEnded:
				ended = d.Sequence == rec.Sequence
			}
		}
		if !started || !ended {
			t.Fatalf("Submit %q answered sequence %d: turn_started of the message %v, its turn_ended %v", msg, rec.Sequence, started, ended)
		}
	}

	// A turn whose events cannot be read once it ended is uncertain: sent
	// again with its key, the submission answers the same turn.
	g.refusingWith(refusal{status: http.StatusForbidden}, func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events")
	})
	_, err = s.Submit(ctx, api.UserInput{Message: "unread"})
	var ue *client.UncertainError
	if !errors.As(err, &ue) || ue.Key == "" || !errors.Is(err, api.ErrUnauthorized) {
		t.Fatalf("Submit whose turn's events could not be read: %v, want an UncertainError carrying the refusal", err)
	}
	g.refusingWith(refusal{}, nil)
	rec, err := s.Submit(ctx, api.UserInput{Message: "unread"}, client.IdempotencyKey(ue.Key))
	if err != nil || rec.Sequence <= last {
		t.Fatalf("Submit sent again with its key = %+v, %v, want the turn after sequence %d", rec, err, last)
	}

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	sum, err := s.Send(sctx, api.UserInput{Message: "owned"})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send with a cancellable ctx behind a proxy that drops Prefer = %+v, %v", sum, err)
	}
	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr)
	for _, want := range []string{"echo: first", "echo: second", "echo: unread", "echo: owned"} {
		if n := strings.Count(string(raw), want); n != 1 {
			t.Fatalf("%d answers %q in the transcript, want 1", n, want)
		}
	}

	_, err = s.Submit(ctx, api.UserInput{Message: `{"fail":{"code":"rate_limited","message":"slow down"}}`})
	var ae *api.ApiError
	if !errors.As(err, &ae) || !errors.Is(err, api.ErrModelProviderFailed) {
		t.Fatalf("Submit of a turn that failed behind a proxy that drops Prefer: %v, want the turn's failure", err)
	}
	if dropped.Load() < 6 {
		t.Fatalf("the proxy dropped Prefer of %d requests, want every submission's", dropped.Load())
	}
}
