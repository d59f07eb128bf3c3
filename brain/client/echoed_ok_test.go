package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestSuccessEchoHidesCredentials: something at the base URL that answers
// every request 200 with JSON echoing it (a debugging echo service, a
// misrouted proxy) is not Brain's answer. The error says so and quotes
// the answer, but neither the bearer token nor the model's API key the
// request carried reaches the error's text or its *api.ApiError.
func TestSuccessEchoHidesCredentials(t *testing.T) {
	const token, apiKey = "sekrit-operator-token-0123456789", "sk-sekrit-model-key-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.Path,
			"headers": map[string]string{"Authorization": r.Header.Get("Authorization")},
			"body":    string(body),
		})
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, &client.Options{Token: token, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := c.Sessions.Open("ses_aaaaaaaaaaaaaaaaaaaa")
	calls := map[string]func() error{
		"create": func() error {
			_, err := c.Sessions.Create(ctx, api.CreateSessionRequest{Model: api.ModelConfig{Provider: "openai", Name: "m", APIKey: apiKey}})
			return err
		},
		"list":       func() error { _, err := c.Sessions.List(ctx); return err },
		"get":        func() error { _, err := s.Refresh(ctx); return err },
		"transcript": func() error { _, err := s.Transcript(ctx); return err },
		"end":        func() error { _, err := s.End(ctx); return err },
		"models":     func() error { _, err := c.Models.List(ctx); return err },
		"events": func() error {
			for _, err := range s.Events(ctx, 0) {
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	for name, call := range calls {
		err := call()
		var ae *api.ApiError
		if !errors.As(err, &ae) || ae.Code != api.CodeInternal || !strings.Contains(ae.Message, "not answered by Brain") {
			t.Errorf("%s: err = %v, want an ApiError saying the answer is not Brain's", name, err)
			continue
		}
		for _, secret := range []string{token, apiKey} {
			if strings.Contains(err.Error(), secret) || strings.Contains(ae.Message, secret) {
				t.Errorf("%s: the error shows the credential %q: %v", name, secret, err)
			}
		}
	}
}
