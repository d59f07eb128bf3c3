package model

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestKeyThatCannotBeSent: an API key that no HTTP header can carry (a
// trailing line break from a file, say) is refused when the client is
// opened, as an invalid spec whose error does not name the key, rather than failing
// every call as a retryable connection failure.
func TestKeyThatCannotBeSent(t *testing.T) {
	for _, d := range dialects {
		for _, key := range []string{testKey + "\n", testKey + "\r\nX-Other: 1", "sk-\x00" + testKey} {
			t.Run(d.provider, func(t *testing.T) {
				f := newFake(t)
				p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1"})
				if err != nil {
					t.Fatal(err)
				}
				c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: key})
				if err == nil {
					_, err = c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
					var pe *ProviderError
					if errors.As(err, &pe) {
						t.Fatalf("Call = %v (retryable %v), want the spec refused at Open", err, pe.Retryable)
					}
					t.Fatalf("Open accepted the key; Call = %v", err)
				}
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("Open = %v, want ErrInvalidSpec", err)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Fatalf("the error carries the key: %v", err)
				}
				if n := len(f.requests()); n != 0 {
					t.Fatalf("%d requests sent", n)
				}
			})
		}
	}
}
