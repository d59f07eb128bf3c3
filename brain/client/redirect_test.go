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

// TestRedirectedWriteIsNotReportedDone: a proxy in front of Brain that
// redirects (a 301 to the canonical address, as from http to https) has
// the HTTP client follow a DELETE or a POST with a GET of the URL it
// names: Brain answers the GET, and the write was never sent to it. The
// call fails with ErrRedirected instead of taking the GET's answer for
// the write's, and is not sent again.
func TestRedirectedWriteIsNotReportedDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	var redirected atomic.Int32
	g.redirecting(func(r *http.Request) bool {
		if r.Method == http.MethodGet {
			return false
		}
		redirected.Add(1)
		return true
	})
	defer g.redirecting(nil)

	err = s.Delete(ctx)
	if !errors.Is(err, client.ErrRedirected) || !strings.Contains(err.Error(), "GET") {
		t.Fatalf("Delete redirected to a GET: %v, want ErrRedirected naming the GET", err)
	}
	var ue *client.UncertainError
	if errors.As(err, &ue) {
		t.Fatalf("Delete redirected to a GET: %v, want no UncertainError (it was not passed on)", err)
	}
	if n := redirected.Load(); n != 1 {
		t.Fatalf("Delete redirected %d times, want once (not sent again)", n)
	}
	if _, err := c.Sessions.Get(ctx, s.ID); err != nil {
		t.Fatalf("the session after a redirected Delete: %v, want it still there", err)
	}
	g.redirecting(nil)
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sessions.Get(ctx, s.ID); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("the session after Delete: %v, want not_found", err)
	}
}
