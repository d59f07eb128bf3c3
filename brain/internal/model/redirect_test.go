package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestRedirectNotFollowed: a provider answer that redirects elsewhere is
// not followed. Following it would post the conversation again, with the
// credential (x-api-key is not among the headers Go drops on a redirect to
// another host), to wherever the answer points.
func TestRedirectNotFollowed(t *testing.T) {
	for _, d := range dialects {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			t.Run(d.provider+"/"+http.StatusText(code), func(t *testing.T) {
				var mu sync.Mutex
				var leaked []string
				other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					leaked = append(leaked, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
					mu.Unlock()
					sse(d.render(turn{text: []string{"hi"}, stop: api.StopEndTurn}))(w, nil)
				}))
				defer other.Close()
				// Another host name for the same listener: a different origin.
				elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
				f, c := open(t, d, Limits{})
				f.set(func(w http.ResponseWriter, r *recorded) {
					http.Redirect(w, &http.Request{Method: r.Method}, elsewhere+r.Path, code)
				})
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				mu.Lock()
				got := leaked
				mu.Unlock()
				if len(got) != 0 {
					t.Fatalf("the redirect was followed: %d request(s) to another host, credential %q", len(got), got)
				}
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.Retryable {
					t.Fatalf("err = %v, want a non-retryable provider error", err)
				}
				if !strings.Contains(pe.Message, "redirect") || !strings.Contains(pe.Message, elsewhere) {
					t.Errorf("message %q does not say where the provider redirected", pe.Message)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
			})
		}
	}
}
