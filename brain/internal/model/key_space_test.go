package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// echoCredential answers 401 with an error that quotes the credential the
// server received, as a gateway or a local server may.
func echoCredential(w http.ResponseWriter, r *recorded) {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if got == "" {
		got = r.Header.Get("X-Api-Key")
	}
	status(http.StatusUnauthorized, mustJSON(map[string]any{"error": map[string]any{
		"message": "Incorrect API key provided: " + got + ".", "type": "invalid_request_error", "code": "invalid_api_key"}}))(w, r)
}

// TestKeyWithSurroundingSpace: a key pasted with a space or tab before or
// after it is sent without them (as HTTP carries a header value), and an
// answer that echoes the key as the server received it does not put it in
// the error.
func TestKeyWithSurroundingSpace(t *testing.T) {
	for _, d := range dialects {
		for _, key := range []string{testKey + " ", "\t" + testKey, " " + testKey + "\t "} {
			t.Run(d.provider, func(t *testing.T) {
				f, c := openKey(t, d, key, Limits{})
				f.set(echoCredential)
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) || pe.Code != "invalid_api_key" {
					t.Fatalf("Call = %v, want the provider's invalid_api_key", err)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Fatalf("the error carries the key: %v", err)
				}
				if !strings.Contains(pe.Message, "Incorrect API key provided: [redacted].") {
					t.Fatalf("message %q does not show the key redacted", pe.Message)
				}
				d.checkAuth(t, f.last(t).Header, testKey)
			})
		}
	}
}
