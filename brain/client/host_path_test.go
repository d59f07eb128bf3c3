package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// A host id is one path segment: an id given to ResumeHost that holds
// "/", "?" or "%" reaches only its own host's routes, with the host token,
// and one that cannot be a segment ("", ".", "..") is refused before any
// request.
func TestHostIDIsOneSegment(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code":"unauthorized","message":"no such host"}`))
	}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []string{"../sessions/ses_aaaaaaaaaaaaaaaaaaaa", "x/../../v1/sessions", "x?after=1", "host_%2e%2e", "a/b"} {
		mu.Lock()
		paths = nil
		mu.Unlock()
		c, err := New(hs.URL, &Options{Token: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.ResumeHost(api.HostRegistration{HostID: id, Token: "host-token"})
		if err != nil {
			t.Fatalf("ResumeHost(%q): %v", id, err)
		}
		if err := h.Connected(ctx); err == nil {
			t.Fatalf("host %q connected to a server that knows no host", id)
		}
		tc := &ToolCall{h: h, SessionID: "ses_aaaaaaaaaaaaaaaaaaaa", Sequence: 1}
		if _, err := tc.Emit(ctx, "progress", 1); err == nil {
			t.Fatalf("host %q: an event was accepted", id)
		}
		c.Close()
		mu.Lock()
		got := append([]string(nil), paths...)
		mu.Unlock()
		if len(got) < 2 {
			t.Fatalf("host %q: requests %q, want the commands connection and the event", id, got)
		}
		for _, p := range got {
			rest, ok := strings.CutPrefix(p, "/v1/hosts/")
			seg, route, _ := strings.Cut(rest, "/")
			if !ok || strings.Contains(route, "/") || (route != "commands" && route != "events") || seg == "" {
				t.Errorf("host id %q reached %s", id, p)
			}
		}
	}
	for _, reg := range []api.HostRegistration{{HostID: "", Token: "t"}, {HostID: ".", Token: "t"}, {HostID: "..", Token: "t"}, {HostID: "host_aaaaaaaaaaaaaaaaaaaa", Token: ""}} {
		c, err := New(hs.URL, &Options{Token: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		paths = nil
		mu.Unlock()
		if _, err := c.ResumeHost(reg); err == nil {
			t.Errorf("ResumeHost(%+v) was taken", reg)
		}
		c.Close()
		mu.Lock()
		if len(paths) > 0 {
			t.Errorf("ResumeHost(%+v) sent %q", reg, paths)
		}
		mu.Unlock()
	}
}

// A session id "." or ".." is one path segment as well: a server that
// cleans paths (as net/http's ServeMux does, redirecting with the method
// and body kept) sees the session's own route, not the one above it.
func TestDotSessionIDIsOneSegment(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, "session "+r.PathValue("id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"not_found","message":"no session"}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, "other "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"not_found","message":"no route"}`))
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	c, err := New(hs.URL, &Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, id := range []string{".", ".."} {
		mu.Lock()
		got = nil
		mu.Unlock()
		if _, err := c.Sessions.Open(id).Refresh(context.Background()); err == nil {
			t.Fatalf("Refresh of %q succeeded", id)
		}
		mu.Lock()
		if len(got) != 1 || got[0] != "session "+id {
			t.Errorf("Refresh of session %q reached %q, want only the session's route", id, got)
		}
		mu.Unlock()
	}
}
