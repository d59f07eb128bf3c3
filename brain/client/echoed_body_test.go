package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestCreateErrorsHideEchoedCredentials: a session's creation carries the
// model's API key and an http environment's credential in its body. An
// error answer that quotes the body (a debugging proxy's or a gateway's
// page that echoes the request it refused, or an answer that names the
// value it refused) does not put either into the error the caller prints
// or logs, whatever the status: not in the error's text, nor in the
// *api.ApiError's message or details.
func TestCreateErrorsHideEchoedCredentials(t *testing.T) {
	const apiKey = "sk-model-key-0123456789abcdef"
	const credential = "env-credential-<&>-9876543210"
	for _, status := range []int{http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge, http.StatusConflict} {
		for _, brains := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/brains-%v", status, brains), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					if brains {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(status)
						fmt.Fprintf(w, `{"code":"invalid_request","message":"refused %s","retryable":false,"details":{"request":%s}}`, strings.ReplaceAll(string(body), `"`, `'`), body)
						return
					}
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(status)
					fmt.Fprintf(w, "<html>refused the request %s</html>", body)
				}))
				defer srv.Close()
				c, err := client.New(srv.URL, &client.Options{Token: "server-token-0123456789", Retries: -1})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err = c.Sessions.Create(ctx, api.CreateSessionRequest{
					Model:        api.ModelConfig{Provider: "openai", Name: "m", APIKey: apiKey},
					Environments: []api.Environment{{Name: "remote", Driver: api.DriverHTTP, URL: "https://env.example", Credential: credential}},
				})
				if err == nil {
					t.Fatal("create answered an error: no error")
				}
				for _, secret := range []string{apiKey, credential, "env-credential-\\u003c\\u0026\\u003e-9876543210"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("the error prints the credential %q: %v", secret, err)
					}
					var ae *api.ApiError
					if errors.As(err, &ae) && (strings.Contains(ae.Message, secret) || strings.Contains(string(ae.Details), secret)) {
						t.Errorf("the ApiError holds the credential %q: %+v", secret, ae)
					}
				}
			})
		}
	}
}
