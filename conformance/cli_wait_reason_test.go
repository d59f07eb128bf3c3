package conformance_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
)

// TestRunCLIUnreachableKeepsTheReason: when --wait ends while an attempt
// to reach the provider is still under way, the error names why the
// attempts before it failed (here a gateway's 503), not the wait's own
// deadline.
func TestRunCLIUnreachableKeepsTheReason(t *testing.T) {
	var attempts atomic.Int64
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) == 1 {
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		}
		// Every later attempt hangs until it is given up (the server
		// sees the client go once the body is read).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(gateway.Close)
	var stdout, stderr bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", gateway.URL, "--profile", referenceProfile(t), "--wait", "1s"}, &stdout, &stderr)
	if code != conformance.ExitUnreachable {
		t.Fatalf("exit %d, want %d\n%s%s", code, conformance.ExitUnreachable, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "answered 503") {
		t.Errorf("the error does not name the gateway's 503:\n%s", stderr.String())
	}
}
