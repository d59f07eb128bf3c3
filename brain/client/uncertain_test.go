package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestUncertainErrorCarriesTheKey: a keyed write whose outcome stays
// unknown (every answer lost, or ctx ended while it was under way) fails
// with an *UncertainError naming the key the client chose, and the same
// write sent again with that key is answered with the first's outcome: it
// was carried out once. A write Brain answered is no UncertainError.
func TestUncertainErrorCarriesTheKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)

	count := func() int {
		l, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	check := func(name string, err error, want error) {
		t.Helper()
		var ue *client.UncertainError
		if !errors.As(err, &ue) || ue.Key == "" {
			t.Fatalf("%s: %v, want an UncertainError with the key", name, err)
		}
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want it to wrap %v", name, err, want)
		}
		g.losing(nil)
		n := count()
		again, err := c.Sessions.Create(ctx, scripted, client.IdempotencyKey(ue.Key))
		if err != nil {
			t.Fatalf("%s: the create sent again with its key: %v", name, err)
		}
		if count() != n {
			t.Fatalf("%s: the create sent again with its key made another session", name)
		}
		if _, err := c.Sessions.Get(ctx, again.ID); err != nil {
			t.Fatal(err)
		}
	}

	// Every answer lost: the error wraps the proxy's last answer.
	g.losing(keyed(http.MethodPost, "/v1/sessions", http.StatusBadGateway, ""))
	_, err := c.Sessions.Create(ctx, scripted)
	var ae *api.ApiError
	if !errors.As(err, &ae) {
		t.Fatalf("create whose answers were lost: %v, want the proxy's answer as an ApiError", err)
	}
	check("lost answers", err, ae)

	// ctx ends while the create is under way.
	release := g.holding()
	g.losing(keyed(http.MethodPost, "/v1/sessions", http.StatusBadGateway, ""))
	short, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = c.Sessions.Create(short, scripted)
	stop()
	release()
	check("ctx ended", err, context.DeadlineExceeded)

	// Brain's own answer is no uncertainty.
	_, err = c.Sessions.Create(ctx, api.CreateSessionRequest{})
	var ue *client.UncertainError
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidRequest || errors.As(err, &ue) {
		t.Fatalf("invalid create = %v, want Brain's invalid_request alone", err)
	}
}

// TestOwnedSendUncertainAfterAdmission: Send with a ctx that can be
// cancelled submits its turn, then follows it and reads the session's
// summary. When that read gets no answer (a proxy answers 502 in the
// server's stead) after the turn ran, Send fails with an UncertainError
// carrying the submission's key, and Send again with that key answers the
// turn's summary without running it again.
func TestOwnedSendUncertainAfterAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	s, err := c.Sessions.Create(ctx, scripted)
	if err != nil {
		t.Fatal(err)
	}
	summary := "/v1/sessions/" + s.ID
	g.losing(func(r *http.Request) (int, string, bool) {
		return http.StatusBadGateway, "", r.Method == http.MethodGet && r.URL.Path == summary
	})
	_, err = s.Send(ctx, api.UserInput{Message: "once"})
	var ue *client.UncertainError
	if !errors.As(err, &ue) || ue.Key == "" {
		t.Fatalf("owned Send whose summary read failed = %v, want an UncertainError with the key", err)
	}
	g.losing(nil)
	sum, err := s.Send(ctx, api.UserInput{Message: "once"}, client.IdempotencyKey(ue.Key))
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("owned Send again with its key = %+v, %v", sum, err)
	}
	tr, err := s.Transcript(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tr.Messages); n != 2 {
		t.Fatalf("%d messages after one turn sent twice with one key", n)
	}
}
