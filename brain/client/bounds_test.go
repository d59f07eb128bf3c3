package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/client"
)

// frontedClient starts Brain with token "tok" behind a front that answers
// the requests intercept takes itself and relays the others, and answers
// a client of the front with no retries.
func frontedClient(t *testing.T, intercept func(w http.ResponseWriter, r *http.Request) bool) *client.Client {
	t.Helper()
	b := braintest.Start(t, braintest.Options{Token: "tok"})
	u, err := url.Parse(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(front.Close)
	c, err := client.New(front.URL, &client.Options{Token: "tok", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// endless writes an error page that never ends, as a misbehaving proxy
// in front of the server may, until the client leaves.
func endless(w http.ResponseWriter, r *http.Request, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	chunk := []byte("<p>" + strings.Repeat("upstream unavailable ", 200) + "</p>\n")
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// TestEndlessErrorAnswerIsBounded has a proxy answer a session's summary
// and its event stream with a 502 or 401 page that never ends: the calls
// fail with a short error holding the status's code once a bounded part
// of the page is read, instead of reading it until ctx ends (and holding
// all of it in memory and in the error's text).
func TestEndlessErrorAnswerIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := frontedClient(t, func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/events"):
			endless(w, r, http.StatusUnauthorized)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/sessions/"):
			endless(w, r, http.StatusBadGateway)
		default:
			return false
		}
		return true
	})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, code string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: failed only when ctx ended: %.300v", what, err)
		}
		var ae *api.ApiError
		if !errors.As(err, &ae) || ae.Code != code {
			t.Fatalf("%s: error %.300v, want an *api.ApiError with code %s", what, err, code)
		}
		if n := len(err.Error()); n > 2048 {
			t.Fatalf("%s: error of %d bytes: %.300s", what, n, err)
		}
	}
	_, err = s.Refresh(ctx)
	check("Refresh", err, api.CodeInternal)
	for _, err := range s.Events(ctx, 0, client.Follow()) {
		check("Follow", err, api.CodeUnauthorized)
		break
	}
}

// TestFollowOfAnAnswerThatIsNoStream follows a session through a front
// that answers the stream's request 200 with a web page (a proxy's or a
// static server's fallback for unknown paths): the iteration ends with an
// error that says so, instead of connecting again until ctx ends.
func TestFollowOfAnAnswerThatIsNoStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := frontedClient(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Accept") != "text/event-stream" {
			return false
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>app</title>\n"))
		return true
	})
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev, err := range s.Events(ctx, 0, client.Follow()) {
		if err == nil {
			t.Fatalf("yielded %+v", ev)
		}
		n++
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Follow failed only when ctx ended: %v", err)
		}
		if !errors.Is(err, client.ErrNotEventStream) || !strings.Contains(err.Error(), "text/html") {
			t.Fatalf("Follow: %v, want client.ErrNotEventStream naming the answer's content type", err)
		}
	}
	if n != 1 {
		t.Fatalf("Follow yielded %d errors, want 1", n)
	}
}

// TestHostOfAnAnswerThatIsNoStream registers a host through a front that
// answers its commands connection 200 with a web page: Connected fails
// with client.ErrNotEventStream, and the host stops with it, instead of
// taking the page for a connection and asking for it again and again.
func TestHostOfAnAnswerThatIsNoStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var pages atomic.Int32
	c := frontedClient(t, func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/commands") {
			return false
		}
		pages.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>app</title>\n"))
		return true
	})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Connected(ctx)
	if !errors.Is(err, client.ErrNotEventStream) {
		t.Fatalf("Connected: %v, want client.ErrNotEventStream", err)
	}
	if !errors.Is(h.Err(), client.ErrNotEventStream) {
		t.Fatalf("Err: %v, want client.ErrNotEventStream", h.Err())
	}
	if n := pages.Load(); n != 1 {
		t.Fatalf("the commands connection was asked for %d times", n)
	}
}
