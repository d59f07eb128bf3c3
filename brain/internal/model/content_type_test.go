package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestWrongContentTypeShownShort: a 2xx answer that is not an event
// stream fails invalid_response naming its Content-Type, shortened and
// without the API key where the header echoes it (a media type is read
// in lower case, so the key here is too).
func TestWrongContentTypeShownShort(t *testing.T) {
	const key = "sk-lower-case-key-5e1d"
	for _, ct := range []string{"text/" + key, "text/x-" + strings.Repeat("a", 8<<10)} {
		for _, d := range dialects {
			f := newFake(t)
			p, err := New(Config{OpenAIBaseURL: f.srv.URL + "/v1", AnthropicBaseURL: f.srv.URL + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Open(Spec{Provider: d.provider, Name: d.model, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			f.set(func(w http.ResponseWriter, _ *recorded) {
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(http.StatusOK)
			})
			_, err = c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "hi"})}}, nil)
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.Code != CodeInvalidResponse {
				t.Fatalf("%s: err = %v, want invalid_response", d.provider, err)
			}
			if strings.Contains(err.Error(), key) || len(err.Error()) > 1024 {
				t.Errorf("%s: the error shows the key or runs long (%d bytes): %.300s", d.provider, len(err.Error()), err.Error())
			}
		}
	}
}
