package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestControlAnswerOfAnotherServerIsUncertain: an environment control
// request answered 200 with JSON that is not the view or list Brain
// answers (another service's JSON at the base URL) is no answer of
// Brain's: the call may or may not have reached it, so it fails with an
// *UncertainError carrying its key, whose error says the answer is not
// Brain's, as other keyed writes do; sent again with the key only.
func TestControlAnswerOfAnotherServerIsUncertain(t *testing.T) {
	var sent atomic.Int32
	keys := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sent.Add(1)
		keys <- r.Header.Get("Idempotency-Key")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"data":[]}`)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, &client.Options{Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	for what, call := range map[string]func(key string) error{
		"ListEnvironments": func(key string) error {
			_, err := s.ListEnvironments(ctx, client.IdempotencyKey(key))
			return err
		},
		"GetEnvironment": func(key string) error {
			_, err := s.GetEnvironment(ctx, client.EnvironmentRef{Name: "w", Sequence: 2}, client.IdempotencyKey(key))
			return err
		},
		"SetupEnvironment": func(key string) error {
			_, err := s.SetupEnvironment(ctx, client.EnvironmentRef{Name: "w", Sequence: 2}, client.IdempotencyKey(key))
			return err
		},
	} {
		sent.Store(0)
		key := "key-" + what
		err := call(key)
		var ue *client.UncertainError
		var ae *api.ApiError
		if !errors.As(err, &ue) || ue.Key != key || !errors.As(err, &ae) || !strings.Contains(ae.Message, "not answered by Brain") {
			t.Errorf("%s answered 200 with another server's JSON: %v, want an UncertainError with key %q saying the answer is not Brain's", what, err, key)
		}
		if n := sent.Load(); n != 2 {
			t.Errorf("%s was sent %d times, want twice (once and once again with its key)", what, n)
		}
		for range sent.Load() {
			if k := <-keys; k != key {
				t.Errorf("%s was sent with key %q, want %q", what, k, key)
			}
		}
	}
}
