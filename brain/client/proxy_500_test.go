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

// proxyPage is the page a gateway answers its own 500 with.
const proxyPage = "<html><body><h1>500 Internal Server Error</h1></body></html>"

// TestProxy500IsNoAnswerOfBrains: a gateway in front of Brain that
// answers 500 with its own page (not Brain's error JSON) says nothing of
// whether the request reached Brain. A keyed write so answered is sent
// again with its key and answers Brain's outcome; when every answer is
// the gateway's, it fails with an UncertainError whose key, sent again,
// finds the one session Brain made. A read so answered once is sent
// again. The error says the answer is not Brain's.
func TestProxy500IsNoAnswerOfBrains(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, g := gatewayClient(t)
	count := func() int {
		t.Helper()
		l, err := c.Sessions.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}

	// The first create's answer is lost: the second attempt gets
	// Brain's answer of the first.
	before := count()
	g.losing(once(keyed(http.MethodPost, "/v1/sessions", http.StatusInternalServerError, proxyPage)))
	if _, err := c.Sessions.Create(ctx, scripted); err != nil {
		t.Fatalf("create whose answer a gateway's 500 page replaced once: %v", err)
	}
	g.losing(nil)
	if n := count(); n != before+1 {
		t.Fatalf("%d sessions after one create, %d before", n, before)
	}

	// Every answer is lost.
	before = count()
	g.losing(keyed(http.MethodPost, "/v1/sessions", http.StatusInternalServerError, proxyPage))
	_, err := c.Sessions.Create(ctx, scripted)
	g.losing(nil)
	var ue *client.UncertainError
	if !errors.As(err, &ue) || ue.Key == "" {
		t.Fatalf("create whose every answer was a gateway's 500 page: %v, want an UncertainError with the key", err)
	}
	if !errors.Is(err, api.ErrInternal) || !strings.Contains(err.Error(), "not answered by Brain") {
		t.Fatalf("create whose every answer was a gateway's 500 page: %v, want an internal error saying it is not Brain's", err)
	}
	again, err := c.Sessions.Create(ctx, scripted, client.IdempotencyKey(ue.Key))
	if err != nil {
		t.Fatalf("the create sent again with its key: %v", err)
	}
	if n := count(); n != before+1 {
		t.Fatalf("%d sessions after a create sent again with its key, %d before: it was carried out twice", n, before)
	}

	// A read answered so once is sent again.
	var gets atomic.Int32
	g.refusingWith(refusal{status: http.StatusInternalServerError}, func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Path == "/v1/sessions/"+again.ID && gets.Add(1) == 1
	})
	defer g.refusingWith(refusal{}, nil)
	sum, err := again.Refresh(ctx)
	if err != nil || sum.SessionID != again.ID {
		t.Fatalf("Refresh answered a gateway's 500 once: %+v, %v, want the summary", sum, err)
	}
	if n := gets.Load(); n != 2 {
		t.Fatalf("Refresh answered a gateway's 500 once was sent %d times, want twice", n)
	}
}
