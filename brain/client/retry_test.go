package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

var apiInput = api.UserInput{Message: "x"}

type arrival struct{ method, path, key, prefer, body string }

// dropServer records every request it reads and drops the connection of
// the first drops of them after reading the body, before answering.
type dropServer struct {
	mu       sync.Mutex
	arrivals []arrival
	drops    int
	status   int
	answer   string
}

func (d *dropServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	d.mu.Lock()
	d.arrivals = append(d.arrivals, arrival{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Prefer"), string(b)})
	drop := d.drops > 0
	d.drops--
	status, answer := d.status, d.answer
	d.mu.Unlock()
	if drop {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Prefer") != "" && status == http.StatusOK {
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "9")
		return
	}
	if status == http.StatusOK && (r.Method == http.MethodDelete || strings.HasSuffix(r.URL.Path, "/cancel")) {
		// Brain answers a delete and an interrupt 204, with no body.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (d *dropServer) reset(drops, status int, answer string) {
	d.mu.Lock()
	d.arrivals, d.drops, d.status, d.answer = nil, drops, status, answer
	d.mu.Unlock()
}

func (d *dropServer) seen() []arrival {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]arrival(nil), d.arrivals...)
}

// TestRetryKeepsKeyModeAndBody drops each mutation's connection after the
// server read it: the call is retried with the same Idempotency-Key, the
// same Prefer (a submission stays a submission) and the same bytes, and
// succeeds. A request without a key (host registration) is not retried,
// and answered errors (409, 500 ambiguous, 503) are not retried at all.
func TestRetryKeepsKeyModeAndBody(t *testing.T) {
	ds := &dropServer{}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	summary := `{"session_id":"ses_aaaaaaaaaaaaaaaaaaaa","status":"idle","last_sequence":3}`
	mutations := map[string]func(...CallOption) error{
		"Create": func(o ...CallOption) error {
			_, err := c.Sessions.Create(ctx, api.CreateSessionRequest{System: "s"}, o...)
			return err
		},
		"Send":      func(o ...CallOption) error { _, err := s.Send(ctx, apiInput, o...); return err },
		"Submit":    func(o ...CallOption) error { _, err := s.Submit(ctx, apiInput, o...); return err },
		"Interrupt": func(o ...CallOption) error { return s.Interrupt(ctx, o...) },
		"End":       func(o ...CallOption) error { _, err := s.End(ctx, o...); return err },
		"Delete":    func(o ...CallOption) error { return s.Delete(ctx, o...) },
	}
	for name, call := range mutations {
		ds.reset(1, http.StatusOK, summary)
		if err := call(); err != nil {
			t.Fatalf("%s after a dropped connection: %v", name, err)
		}
		got := ds.seen()
		if len(got) != 2 || got[0] != got[1] || got[0].key == "" {
			t.Fatalf("%s: arrivals %+v, want the same keyed request twice", name, got)
		}
		if (name == "Submit") != (got[1].prefer == "respond-async") {
			t.Fatalf("%s retried with Prefer %q", name, got[1].prefer)
		}
		for _, e := range []struct {
			status int
			code   string
		}{{409, api.CodeConflict}, {500, api.CodeAmbiguous}, {503, api.CodeOverloaded}} {
			ds.reset(0, e.status, `{"code":"`+e.code+`","message":"m","retryable":false,"details":{"k":1}}`)
			err := call(IdempotencyKey("k"))
			var ae *api.ApiError
			if !errors.As(err, &ae) || ae.Code != e.code || string(ae.Details) != `{"k":1}` {
				t.Fatalf("%s answered %d: %v", name, e.status, err)
			}
			if n := len(ds.seen()); n != 1 {
				t.Fatalf("%s answered %s was sent %d times", name, e.code, n)
			}
		}
	}
	ds.reset(1, http.StatusOK, `{"host_id":"host_aaaaaaaaaaaaaaaaaaaa","token":"t"}`)
	if _, err := c.Host(ctx); err == nil {
		t.Fatal("host registration succeeded after its connection dropped")
	}
	if n := len(ds.seen()); n != 1 {
		t.Fatalf("host registration (no key) was sent %d times", n)
	}
}

// TestUncertainAfterALostAttempt: a mutation whose first attempt reached
// the server and lost its connection, and whose retry is refused before
// its key is looked up (503 overloaded: the server drains), fails with an
// UncertainError carrying the key it was sent with, as the first attempt
// may have been carried out; a retry answered with the key's outcome
// (here a conflict) is that answer alone. A call that never reached the
// server (nothing listens) is no UncertainError.
func TestUncertainAfterALostAttempt(t *testing.T) {
	ds := &dropServer{}
	srv := httptest.NewServer(ds)
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")

	ds.reset(1, http.StatusServiceUnavailable, `{"code":"overloaded","message":"the server is shutting down","retryable":true}`)
	err = s.Interrupt(ctx)
	var ue *UncertainError
	var ae *api.ApiError
	if !errors.As(err, &ue) || !errors.As(err, &ae) || ae.Code != api.CodeOverloaded {
		t.Fatalf("interrupt whose first attempt was lost, then refused = %v, want an UncertainError wrapping overloaded", err)
	}
	if got := ds.seen(); len(got) != 2 || got[0].key != ue.Key || got[1].key != ue.Key {
		t.Fatalf("arrivals %+v, UncertainError key %q", got, ue.Key)
	}

	ds.reset(1, http.StatusConflict, `{"code":"conflict","message":"m","retryable":false}`)
	err = s.Interrupt(ctx)
	if errors.As(err, &ue) || !errors.As(err, &ae) || ae.Code != api.CodeConflict {
		t.Fatalf("interrupt whose retry was answered conflict = %v, want the conflict alone", err)
	}

	srv.Close()
	fresh, err := New(srv.URL, nil) // no connection kept from before
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	_, err = fresh.Sessions.Create(ctx, api.CreateSessionRequest{})
	if err == nil || errors.As(err, &ue) {
		t.Fatalf("create with nothing listening = %v, want an error that is no UncertainError", err)
	}
}
