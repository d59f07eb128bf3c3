package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClosingEveryClientReleasesConnections uses a client and one derived
// with WithToken, closes the parent first and the derived client last:
// once both are closed no connection of theirs is left open (no
// transport goroutine is left reading or writing).
func TestClosingEveryClientReleasesConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"sessions":[]}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := c.WithToken("other")
	if _, err := c.Sessions.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := d.Sessions.List(context.Background()); err != nil {
		t.Fatalf("the derived client after its parent closed: %v", err)
	}
	d.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := transportGoroutines()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transport goroutines left after every client closed", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func transportGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "net/http.(*persistConn).readLoop") + strings.Count(string(buf), "net/http.(*persistConn).writeLoop")
}

// TestCallsLeaveCallerOptionsAlone passes options in a slice with spare
// capacity, as a caller sharing one option slice between goroutines
// does: the client does not write into the caller's array (concurrent
// calls would otherwise race on it, and one could send the other's
// module).
func TestCallsLeaveCallerOptionsAlone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Prefer") != "" {
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, "5")
			return
		}
		_, _ = io.WriteString(w, `{"id":"x","status":"admitted"}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	opts := make([]CallOption, 0, 4)
	if _, err := c.Agentloops.Upload(ctx, []byte("module"), opts...); err != nil {
		t.Fatal(err)
	}
	if opts[:1][0] != nil {
		t.Error("Agentloops.Upload wrote into the caller's option slice")
	}
	if _, err := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa").Submit(ctx, apiInput, opts...); err != nil {
		t.Fatal(err)
	}
	if opts[:1][0] != nil {
		t.Error("Submit wrote into the caller's option slice")
	}
}

// A session id is one path segment: an id holding "/", "?" or ".." (one
// taken from untrusted input and opened) reaches no other route.
func TestSessionIDIsOneSegment(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"not_found","message":"no session"}`))
	}))
	defer hs.Close()
	c, err := New(hs.URL, &Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, id := range []string{"../hosts", "x/../../v1/hosts", "x?after=1", "a/b"} {
		paths = nil
		if _, err := c.Sessions.Open(id).Refresh(context.Background()); err == nil {
			t.Fatalf("Refresh of %q succeeded", id)
		}
		for _, p := range paths {
			if rest, ok := strings.CutPrefix(p, "/v1/sessions/"); !ok || strings.Contains(rest, "/") {
				t.Fatalf("id %q reached %s", id, p)
			}
		}
	}
}
