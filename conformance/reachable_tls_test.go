package conformance_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
)

// A provider whose certificate is not trusted is reported at once, naming
// the certificate: waiting for it to come up cannot change that.
func TestReachableReportsAnUntrustedCertificateAtOnce(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	start := time.Now()
	err := conformance.Reachable(context.Background(), &http.Client{}, srv.URL, time.Minute)
	var untrusted *tls.CertificateVerificationError
	if !errors.As(err, &untrusted) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Reachable over an untrusted certificate = %v, want the certificate's verification error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("answered after %v of a one-minute wait", took)
	}
	// Trusted, the same provider is reachable.
	if err := conformance.Reachable(context.Background(), srv.Client(), srv.URL, time.Minute); err != nil {
		t.Fatalf("Reachable with the provider's authority trusted: %v", err)
	}
}
