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

// A provider whose limit is below the one its profile declares refuses
// commands Brain may send it: a body of exactly the declared limit must
// be served, so transport/body-too-large fails and says which limit.
func TestBodyLimitBelowTheDeclaredOneFails(t *testing.T) {
	const limit = 1 << 20
	opts := testOptions
	opts.MaxBodyBytes = limit
	opts.Run = []string{"transport/body-too-large"}
	for name, tc := range map[string]struct {
		refuseFrom int64
		want       []string
	}{
		"at-the-limit": {refuseFrom: limit + 1, want: nil},
		"off-by-one":   {refuseFrom: limit, want: opts.Run},
	} {
		t.Run(name, func(t *testing.T) {
			limited := func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.ContentLength >= tc.refuseFrom {
						http.Error(w, `{"error":"body too large"}`, http.StatusRequestEntityTooLarge)
						return
					}
					next.ServeHTTP(w, r)
				})
			}
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 4 * limit}, limited)
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, tc.want) {
				t.Fatalf("failed %v, want %v\n%s", got, tc.want, details(report))
			}
			if log := strings.Join(report.Results[0].Log, "\n"); tc.want != nil && !strings.Contains(log, "1048576 bytes") {
				t.Errorf("the failure does not name the declared limit:\n%s", log)
			}
		})
	}
}
