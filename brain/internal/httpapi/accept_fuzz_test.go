package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// FuzzAccept feeds arbitrary Accept headers to the negotiation of the
// stream routes: it never panics; it refuses only with the 400 of a
// malformed header or the 406; weights stay within 0..1; a header that
// does not name text/event-stream never opens a stream, nor one that
// gives it weight 0.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{
		"text/event-stream", "text/event-stream;q=0", "application/json, text/event-stream;q=0.5",
		"*/*", "text/*;q=0.3", "TEXT/EVENT-STREAM; Q=1.000", "a/b;c=d;q=0.1", ";;,", "text/event-stream;q=1.0001",
		"application/*;q=0", "text/event-stream;charset=\"utf-8\";q=0.9",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r := &http.Request{Header: http.Header{"Accept": {accept}}}
		sse, err := wantsStream(r)
		if err != nil {
			var he *Error
			if !errors.As(err, &he) || (he.Status != http.StatusBadRequest && he.Status != http.StatusNotAcceptable) || he.Body.Code != api.CodeInvalidRequest {
				t.Fatalf("Accept %q: refusal %v is not a 400 or 406 invalid_request", accept, err)
			}
			if sse {
				t.Fatalf("Accept %q: a stream with a refusal", accept)
			}
		}
		if sse && !strings.Contains(strings.ToLower(accept), "text/event-stream") {
			t.Fatalf("Accept %q: a stream that was not asked for", accept)
		}
		a, err := accepts(r, mediaStream, mediaJSON)
		if err != nil {
			return
		}
		for _, x := range a {
			if x.q < 0 || x.q > 1000 || x.precision < 0 || x.precision > 3 {
				t.Fatalf("Accept %q: acceptance %+v out of range", accept, x)
			}
		}
		if sse && a[0].q == 0 {
			t.Fatalf("Accept %q: a stream refused with weight 0 was opened", accept)
		}
	})
}
