package conformance_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// TestUnansweredRequestIsNamed: a provider that never answers a request
// fails the case with a first line (the table's detail, the JUnit
// message) saying there was no answer, not that it answered status 0.
func TestUnansweredRequestIsNamed(t *testing.T) {
	hangOnUnknownPaths := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/operations" {
				_, _ = io.Copy(io.Discard, r.Body) // so that a closed connection ends r's context
				<-r.Context().Done()
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	opts := testOptions
	opts.Timeout = time.Second
	opts.Run = []string{"transport/not-found"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, hangOnUnknownPaths)
	}, &opts)
	if len(report.Results) != 1 || report.Results[0].Status != conformance.Fail {
		t.Fatalf("want transport/not-found to fail:\n%s", details(report))
	}
	first, _, _ := strings.Cut(report.Results[0].Log[0], "\n")
	if !strings.Contains(first, "no answer within") || strings.Contains(first, "answered 0") || strings.Contains(first, "within -") {
		t.Errorf("the failure's first line does not say the request went unanswered: %q", first)
	}
}
