package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestCallEndingWhileRetryingCarriesTheAnswer: a read that a proxy in
// front of Brain refused (503, Retry-After) and whose ctx ends while the
// client waits to send it again, or while its next attempt is under way,
// fails with ctx's error and also with the refusal, as a followed stream
// does: errors.Is finds context.Canceled, errors.As the *api.ApiError of
// the answer. So does the UncertainError of a keyed write whose answer a
// proxy's 502 stood in for.
func TestCallEndingWhileRetryingCarriesTheAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/"+s.ID
	}
	// cancelling answers a ctx cancelled 200 ms after cancelAt is called.
	cancelling := func() (context.Context, func()) {
		cctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		var once atomic.Bool
		return cctx, func() {
			if !once.Swap(true) {
				time.AfterFunc(200*time.Millisecond, stop)
			}
		}
	}
	check := func(t *testing.T, call string, err error, code string, took time.Duration) {
		t.Helper()
		var ae *api.ApiError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &ae) || ae.Code != code {
			t.Fatalf("%s whose ctx ended while it was retried: %v, want context.Canceled carrying the %s answer", call, err, code)
		}
		if took > 10*time.Second {
			t.Fatalf("%s whose ctx ended while it was retried took %v", call, took)
		}
	}

	t.Run("read waiting to retry", func(t *testing.T) {
		cctx, cancelAt := cancelling()
		var refused atomic.Int32
		g.refusingWith(refusal{status: http.StatusServiceUnavailable, retryAfter: "20"}, func(r *http.Request) bool {
			if !summary(r) {
				return false
			}
			refused.Add(1)
			cancelAt()
			return true
		})
		defer g.refusingWith(refusal{}, nil)
		start := time.Now()
		_, err := s.Refresh(cctx)
		check(t, "Refresh", err, api.CodeOverloaded, time.Since(start))
		if n := refused.Load(); n != 1 {
			t.Fatalf("Refresh asked to wait 20 s was sent %d times before its ctx ended, want once", n)
		}
	})

	t.Run("read in its next attempt", func(t *testing.T) {
		cctx, cancelAt := cancelling()
		var gets atomic.Int32
		g.refusingWith(refusal{status: http.StatusServiceUnavailable}, func(r *http.Request) bool {
			return summary(r) && gets.Add(1) == 1
		})
		// The second attempt reaches Brain, and its answer is held
		// until the client gives it up.
		release := g.holding()
		g.losing(func(r *http.Request) (int, string, bool) {
			if !summary(r) || gets.Load() != 2 {
				return 0, "", false
			}
			cancelAt()
			return http.StatusOK, "", true
		})
		defer func() {
			g.refusingWith(refusal{}, nil)
			g.losing(nil)
			release()
		}()
		start := time.Now()
		_, err := s.Refresh(cctx)
		check(t, "Refresh", err, api.CodeOverloaded, time.Since(start))
	})

	t.Run("keyed write waiting to retry", func(t *testing.T) {
		cctx, cancelAt := cancelling()
		var posts atomic.Int32
		g.refusingWith(refusal{status: http.StatusBadGateway, retryAfter: "20"}, func(r *http.Request) bool {
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/end") {
				return false
			}
			posts.Add(1)
			cancelAt()
			return true
		})
		defer g.refusingWith(refusal{}, nil)
		start := time.Now()
		_, err := s.End(cctx)
		var ue *client.UncertainError
		if !errors.As(err, &ue) || ue.Key == "" {
			t.Fatalf("End whose ctx ended while it was retried: %v, want an UncertainError", err)
		}
		check(t, "End", err, api.CodeInternal, time.Since(start))
		if n := posts.Load(); n != 1 {
			t.Fatalf("End asked to wait 20 s was sent %d times before its ctx ended, want once", n)
		}
	})

	// The session is untouched and the client usable.
	sum, err := s.Refresh(ctx)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Refresh afterwards = %+v, %v, want an idle session", sum, err)
	}
}
