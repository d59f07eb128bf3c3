package conformance_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// redirecting answers every command with a redirect to the same path
// under a query, where the provider serves it.
func redirecting(code int, loop bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RawQuery == "" || loop {
				http.Redirect(w, r, r.URL.Path+"?moved="+r.URL.RawQuery+"1", code)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Brain does not follow redirects: an answer of 3xx is not a response,
// however well the server it points to would answer. A provider that
// redirects every command fails, and one that redirects forever fails
// at once, naming the redirect.
func TestRedirectIsNoAnswer(t *testing.T) {
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{
		{"temporary", redirecting(http.StatusTemporaryRedirect, false)},
		{"permanent", redirecting(http.StatusPermanentRedirect, false)},
		{"loop", redirecting(http.StatusTemporaryRedirect, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions
			opts.Run = []string{"contract/echo", "lifecycle/full"}
			opts.Timeout = 10 * time.Second
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, tc.wrap)
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, opts.Run) {
				t.Fatalf("failed cases %v, want %v\n%s", got, opts.Run, details(report))
			}
			for _, r := range report.Results {
				if log := strings.Join(r.Log, "\n"); !strings.Contains(log, "answered 30") {
					t.Errorf("%s does not report the redirect as the answer:\n%s", r.ID, log)
				}
			}
		})
	}
}
