package conformance_test

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// retryOn5xx is an HTTP transport that sends a request again, up to three
// times, while the answer is a server error: the retrying client a
// provider may put under its callbacks.
type retryOn5xx struct{ next http.RoundTripper }

func (rt retryOn5xx) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	for attempt := 0; ; attempt++ {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		res, err := rt.next.RoundTrip(r)
		if err != nil || res.StatusCode < 500 || attempt == 2 {
			return res, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}

// A provider whose callbacks go through a client that retries server
// errors sends finish again when Brain answers it 5xx: Brain may have
// committed the first, so exec/lost-finish-ack fails it, and the
// reference provider, which sends finish once whatever the answer, passes.
func TestFinishRetriedAfterServerErrorFails(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/lost-finish-ack"}
	for _, tc := range []struct {
		name   string
		client *http.Client
		failed []string
	}{
		{"sends once", nil, nil},
		{"retries 5xx", &http.Client{Transport: retryOn5xx{http.DefaultTransport}}, opts.Run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdk := envsdk.Options{Token: refToken, StopGrace: time.Second, Client: tc.client}
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, nil)
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, tc.failed) {
				t.Fatalf("failed %v, want %v\n%s", got, tc.failed, details(report))
			}
		})
	}
}
