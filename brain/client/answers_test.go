package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestMalformedAnswersAreErrors answers every call with a 2xx whose body
// is JSON but not the answer the route has (null, an empty object, a
// zero sequence): each call fails with an error instead of handing the
// caller a zero value as if it were the server's answer.
func TestMalformedAnswersAreErrors(t *testing.T) {
	var mu sync.Mutex
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		mu.Lock()
		b := body
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Prefer") != "" {
			w.WriteHeader(http.StatusAccepted)
		}
		_, _ = io.WriteString(w, b)
	}))
	defer srv.Close()
	c, err := New(srv.URL, &Options{Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	calls := map[string]func() error{
		"Create": func() error { _, err := c.Sessions.Create(ctx, api.CreateSessionRequest{}); return err },
		"Get":    func() error { _, err := c.Sessions.Get(ctx, s.ID); return err },
		"List":   func() error { _, err := c.Sessions.List(ctx); return err },
		"Send":   func() error { _, err := s.Send(ctx, api.UserInput{Message: "x"}); return err },
		"Submit": func() error { _, err := s.Submit(ctx, api.UserInput{Message: "x"}); return err },
		"End":    func() error { _, err := s.End(ctx); return err },
		"Transcript": func() error {
			_, err := s.Transcript(ctx)
			return err
		},
		"Events": func() error {
			for _, err := range s.Events(ctx, 0) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"ListEnvironments": func() error { _, err := s.ListEnvironments(ctx); return err },
		"GetEnvironment": func() error {
			_, err := s.GetEnvironment(ctx, EnvironmentRef{Name: "e", Sequence: 1})
			return err
		},
		"CallMethod":        func() error { _, err := s.CallMethod(ctx, "e", "m", nil); return err },
		"Agentloops.Upload": func() error { _, err := c.Agentloops.Upload(ctx, []byte("m")); return err },
		"Agentloops.Get":    func() error { _, err := c.Agentloops.Get(ctx, "x"); return err },
	}
	for _, b := range []string{"null", "{}", "0"} {
		mu.Lock()
		body = b
		mu.Unlock()
		for name, call := range calls {
			if err := call(); err == nil {
				t.Errorf("%s answered %s: no error", name, b)
			}
		}
	}
	// A host registration without an id or token starts no host.
	mu.Lock()
	body = `{}`
	mu.Unlock()
	if h, err := c.Host(ctx); err == nil {
		t.Errorf("Host with an empty registration = %+v, no error", h.Registration())
	}
}
