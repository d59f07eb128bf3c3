package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestUnkeyedAnswerOfAnotherServerIsNotBrains: a read or a host's
// registration (calls without an idempotency key) answered 200 by
// something other than Brain (a captive portal's page, another
// service's JSON) fails with an *api.ApiError of code internal,
// retryable, that says the answer is not Brain's, as a keyed write's
// does; not with a bare JSON decoding error, nor with a zero value. A
// read is sent again, as one a proxy answered in Brain's stead; the
// registration, which has no key, is sent once; and a registration's
// answer that is not Brain's is not quoted (it may hold a credential).
func TestUnkeyedAnswerOfAnotherServerIsNotBrains(t *testing.T) {
	for name, body := range map[string]string{
		"captive portal": "<html><head><title>Sign in to the network</title></head><body>token=leaked-secret-1234</body></html>",
		"foreign JSON":   `{"ok":true,"result":{"items":[]},"token":"leaked-secret-1234"}`,
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			sent := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				mu.Lock()
				sent[r.Method+" "+r.URL.Path]++
				mu.Unlock()
				if strings.HasPrefix(body, "<") {
					w.Header().Set("Content-Type", "text/html")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				_, _ = io.WriteString(w, body)
			}))
			defer srv.Close()
			c, err := client.New(srv.URL, &client.Options{Token: "server-token", Retries: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
			notBrains := func(what string, err error) {
				t.Helper()
				var ae *api.ApiError
				if err == nil || !errors.As(err, &ae) || !errors.Is(err, api.ErrInternal) || !ae.Retryable || !strings.Contains(ae.Message, "not answered by Brain") {
					t.Errorf("%s answered 200 with %q: %v, want an internal, retryable *api.ApiError saying the answer is not Brain's", what, body, err)
				}
			}
			_, err = s.Refresh(ctx)
			notBrains("Refresh", err)
			_, err = c.Sessions.List(ctx)
			notBrains("Sessions.List", err)
			_, err = s.Transcript(ctx)
			notBrains("Transcript", err)
			for _, err := range s.Events(ctx, 0) {
				notBrains("Events", err)
			}
			_, err = c.Models.List(ctx)
			notBrains("Models.List", err)
			_, err = c.Agentloops.Get(ctx, strings.Repeat("a", 64))
			notBrains("Agentloops.Get", err)
			h, err := c.Host(ctx)
			if err == nil {
				t.Fatalf("Host answered 200 with %q: registered %+v", body, h.Registration())
			}
			notBrains("Host", err)
			if strings.Contains(err.Error(), "leaked-secret-1234") {
				t.Errorf("Host's error quotes the answer's token: %v", err)
			}

			mu.Lock()
			defer mu.Unlock()
			for _, route := range []string{"GET /v1/sessions/ses_aaaaaaaaaaaaaaaaaaaa", "GET /v1/sessions", "GET /v1/models"} {
				if sent[route] != 2 {
					t.Errorf("%s was sent %d times, want twice (the read and its one retry)", route, sent[route])
				}
			}
			if n := sent["POST /v1/hosts"]; n != 1 {
				t.Errorf("the registration was sent %d times, want once", n)
			}
		})
	}
}
