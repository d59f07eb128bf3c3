package envbind

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A credential made only of digits (a numeric API key) that a provider
// quotes back as a JSON number, alone or inside a longer number, in what
// it answers is redacted as a quoted one is: what a provider answers is
// journaled, and the credential never is.
func TestNumericCredentialNeverJournaled(t *testing.T) {
	const cred = "80417310552"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		if err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		details := json.RawMessage(`{"key":` + auth + `,"list":[1,` + auth + `9],"nested":{"n":-` + auth + `.5}}`)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(envapi.NewResponse(cmd.Operation.Sequence,
			envapi.Failure("refused", "the key was refused", false, details)))
	}))
	defer srv.Close()
	b := testBinder(t, Config{})
	o := op(srv.URL, 1)
	o.Credential = cred
	r, err := b.Deliver(context.Background(), o)
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if r.Type != envapi.ReceiptFailure || r.Code != "refused" {
		t.Fatalf("answered %s %s, want the provider's failure refused", r.Type, r.Code)
	}
	if strings.Contains(string(r.Details), cred) {
		t.Errorf("the journaled details quote the credential: %s", r.Details)
	}
	if !json.Valid(r.Details) || !strings.Contains(string(r.Details), redacted) {
		t.Errorf("details %s, want JSON with the credential replaced by %s", r.Details, redacted)
	}
}
