package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFollowOfAnEventLongerThanTheBound follows a stream whose next event
// is one line longer than the client's bound on a line: the iteration
// ends with ErrMalformedEvent after one connection, instead of connecting
// again from the same cursor (to be sent the same line) until ctx ends.
func TestFollowOfAnEventLongerThanTheBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var streams atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			w.Write([]byte(`{"session_id":"ses_x","status":"running","last_sequence":7}`))
			return
		}
		streams.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: 7\nevent: message_added\ndata: {\"sequence\":7,\"event_type\":\"message_added\",\"data\":\"" + strings.Repeat("x", 4096) + "\"}\n\n"))
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.maxLine = 1024
	n := 0
	for ev, err := range c.Sessions.Open("ses_x").Events(ctx, 0, Follow()) {
		if err == nil {
			t.Fatalf("yielded %+v", ev)
		}
		n++
		if ctx.Err() != nil || !errors.Is(err, ErrMalformedEvent) {
			t.Fatalf("Follow: %v (after %d connections), want ErrMalformedEvent at once", err, streams.Load())
		}
	}
	if n != 1 || streams.Load() != 1 {
		t.Fatalf("Follow yielded %d errors over %d connections, want 1 over 1", n, streams.Load())
	}
}

// TestFollowOfAnEventOfManyLines follows a stream whose next event has
// its data on lines each within the bound and together longer than it:
// the iteration ends with ErrMalformedEvent, as for one long line,
// instead of holding data without a bound until the event ends.
func TestFollowOfAnEventOfManyLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" {
			w.Write([]byte(`{"session_id":"ses_x","status":"running","last_sequence":7}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("id: 7\nevent: message_added\n" + strings.Repeat("data: "+strings.Repeat(" ", 100)+"\n", 64) + "data: {}\n\n"))
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.maxLine = 1024
	for ev, err := range c.Sessions.Open("ses_x").Events(ctx, 0, Follow()) {
		if err == nil {
			t.Fatalf("yielded %+v", ev)
		}
		if !errors.Is(err, ErrMalformedEvent) {
			t.Fatalf("Follow: %v, want ErrMalformedEvent", err)
		}
		return
	}
}
