package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestProxyRefusalsHaveTheirCodes: a proxy in front of the server that
// refuses a call itself (an access rule's 403, a rate limit's 429) answers
// a page, not an ApiError. The 403 is unauthorized, which the caller can
// act on (its credentials or the proxy's rules), never internal; the 429
// is overloaded and retryable. A keyed write the proxy refused was not
// carried out: it is not sent again and fails without an UncertainError.
func TestProxyRefusalsHaveTheirCodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		status    int
		code      string
		retryable bool
	}{
		{http.StatusForbidden, api.CodeUnauthorized, false},
		{http.StatusTooManyRequests, api.CodeOverloaded, true},
	} {
		var posts atomic.Int32
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				posts.Add(1)
			}
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte("<html><body>" + http.StatusText(tc.status) + "</body></html>"))
		}))
		c, err := client.New(hs.URL, &client.Options{Token: "tok"})
		if err != nil {
			t.Fatal(err)
		}
		check := func(call string, err error) {
			t.Helper()
			var ae *api.ApiError
			if !errors.As(err, &ae) || ae.Code != tc.code || ae.Retryable != tc.retryable {
				t.Fatalf("%s answered %d by a proxy: %v, want code %s (retryable %v)", call, tc.status, err, tc.code, tc.retryable)
			}
		}
		_, err = c.Sessions.List(ctx)
		check("list", err)
		_, err = c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "demo"}})
		check("create", err)
		var ue *client.UncertainError
		if errors.As(err, &ue) {
			t.Fatalf("create refused %d by a proxy: %v, want no UncertainError (it was not carried out)", tc.status, err)
		}
		if n := posts.Load(); n != 1 {
			t.Fatalf("create refused %d by a proxy was sent %d times, want once", tc.status, n)
		}
		c.Close()
		hs.Close()
	}
}

// TestProxyRefusalAfterALostAnswer: a keyed write whose first attempt
// lost its answer and whose second a proxy refused with a 429 may have
// been carried out by the first: it fails with an UncertainError naming
// its key.
func TestProxyRefusalAfterALostAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var posts atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if posts.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, &client.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "demo"}})
	var ue *client.UncertainError
	var ae *api.ApiError
	if !errors.As(err, &ue) || ue.Key == "" || !errors.As(err, &ae) || ae.Code != api.CodeOverloaded {
		t.Fatalf("create whose first answer was lost and second refused: %v, want an UncertainError wrapping overloaded", err)
	}
	if n := posts.Load(); n != 2 {
		t.Fatalf("create sent %d times, want twice (the refusal is not sent again)", n)
	}
}

// TestProxyTimeoutsAreRetriedOnlyWhenSafe: a proxy's 408 (it gave up
// waiting for the request) and a CDN's 520 to 524 (its origin answered
// nothing it could relay, or did not answer in time) stand in for Brain's
// answer. A read so answered once is sent again and answers Brain's
// answer; a request without an idempotency key (a host's registration)
// is sent once whatever it is answered, and fails with the proxy's
// answer, retryable, for the caller to decide.
func TestProxyTimeoutsAreRetriedOnlyWhenSafe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	defer g.refusingWith(refusal{}, nil)
	for _, status := range []int{http.StatusRequestTimeout, 520, 521, 522, 523, 524} {
		var gets atomic.Int32
		g.refusingWith(refusal{status: status}, func(r *http.Request) bool {
			return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/"+s.ID && gets.Add(1) == 1
		})
		sum, err := s.Refresh(ctx)
		if err != nil || sum.SessionID != s.ID {
			t.Fatalf("Refresh answered %d once by a proxy: %+v, %v, want the summary", status, sum, err)
		}
		if n := gets.Load(); n != 2 {
			t.Fatalf("Refresh answered %d once by a proxy was sent %d times, want twice", status, n)
		}

		var posts atomic.Int32
		g.refusingWith(refusal{status: status}, func(r *http.Request) bool {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/hosts" {
				posts.Add(1)
				return true
			}
			return false
		})
		_, err = c.Host(ctx)
		var ae *api.ApiError
		if !errors.As(err, &ae) || !ae.Retryable || !errors.Is(err, api.ErrInternal) {
			t.Fatalf("Host answered %d by a proxy: %v, want a retryable internal error", status, err)
		}
		if n := posts.Load(); n != 1 {
			t.Fatalf("Host answered %d by a proxy was sent %d times, want once (it has no key)", status, n)
		}
	}
}
