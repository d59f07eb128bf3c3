package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
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

// streamingStrict validates the operation's member names while it reads
// the body, as a streaming decoder does, and answers 400 at the first
// unknown one without reading the rest; other bodies go on to next
// unchanged.
func streamingStrict(next http.Handler) http.Handler {
	known := []string{"session_id", "environment", "sequence", "request", "binding", "configuration", "template", "context", "reporter"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var seen bytes.Buffer
		dec := json.NewDecoder(io.TeeReader(r.Body, &seen))
		type frame struct {
			object, key bool
			name        string
		}
		var stack []*frame
		for range 64 {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
				continue
			}
			if n := len(stack); n > 0 && stack[n-1].key {
				name := tok.(string)
				stack[n-1].key, stack[n-1].name = false, name
				if n == 2 && stack[0].name == "operation" && !slices.Contains(known, name) {
					http.Error(w, `{"error":"unknown member `+name+`"}`, http.StatusBadRequest)
					return
				}
				continue
			}
			if d, ok := tok.(json.Delim); ok {
				stack = append(stack, &frame{object: d == '{', key: d == '{'})
				continue
			}
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].key = true
			}
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(seen.Bytes()), r.Body))
		next.ServeHTTP(w, r)
	})
}

// A provider that refuses an unknown member as soon as it reads it still
// answers a body over its limit 413 when nothing but the size is wrong:
// the case must leave it nothing else to refuse.
func TestBodyTooLargeOnlyTheSizeIsWrong(t *testing.T) {
	opts := testOptions
	opts.MaxBodyBytes = 1 << 20
	opts.Run = []string{"transport/body-too-large"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: 1 << 20}, streamingStrict)
	}, &opts)
	if got := report.Failed(); len(got) != 0 {
		t.Fatalf("failed %v, want none\n%s", got, details(report))
	}
	if len(report.Results) != 1 || report.Results[0].Status != conformance.Pass {
		t.Fatalf("results %+v, want transport/body-too-large passed", report.Results)
	}
}
