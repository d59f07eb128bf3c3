package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestEchoedKeyCutByTheErrorBound: an error answer that echoes the request
// (its Authorization or x-api-key header, say) and is cut by
// MaxErrorBytes inside the key leaves no part of the key in the error.
func TestEchoedKeyCutByTheErrorBound(t *testing.T) {
	const filler = "request headers: "
	for _, d := range dialects {
		for _, cut := range []int{len(testKey) / 2, len(testKey) - 1} {
			t.Run(d.provider, func(t *testing.T) {
				f, c := open(t, d, Limits{MaxErrorBytes: int64(len(filler) + cut)})
				f.set(func(w http.ResponseWriter, _ *recorded) {
					w.Header().Set("Content-Type", "text/plain")
					w.WriteHeader(http.StatusBadGateway)
					_, _ = w.Write([]byte(filler + testKey + "\nhost: gateway\n"))
				})
				_, err := c.Call(context.Background(), Request{Messages: []api.Message{api.UserMessage(api.UserInput{Message: "x"})}}, nil)
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Fatalf("Call = %v, want a provider error", err)
				}
				if strings.Contains(err.Error(), testKey[:cut]) || strings.Contains(pe.Message, testKey[:cut]) {
					t.Fatalf("the error carries the first %d bytes of the key: %v", cut, err)
				}
				if !strings.Contains(pe.Message, "status 502: "+filler) {
					t.Fatalf("error message %q lost what came before the key", pe.Message)
				}
			})
		}
	}
}
