package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// legacyRequests serves the old request types turn and invoke as
// operations, answering them with a result.
func legacyRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var doc struct {
			Operation struct {
				Sequence uint64 `json:"sequence"`
				Request  struct {
					Type string `json:"type"`
				} `json:"request"`
			} `json:"operation"`
		}
		if json.Unmarshal(body, &doc) == nil && (doc.Operation.Request.Type == "turn" || doc.Operation.Request.Type == "invoke") {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(doc.Operation.Sequence, envapi.Result(json.RawMessage(`{"legacy":true}`))))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// servesThenRefuses answers 401 to a request whose Authorization is
// present but wrong only after serving it as if it were right.
func servesThenRefuses(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "" && auth != "Bearer "+refToken {
			r.Header.Set("Authorization", "Bearer "+refToken)
			next.ServeHTTP(&buffered{header: http.Header{}}, r)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestBrokenProvidersUnnoticedElsewhere runs the whole suite against
// broken providers whose fault no other case notices, and checks that
// the suite fails, on the case named, with a message naming the rule.
func TestBrokenProvidersUnnoticedElsewhere(t *testing.T) {
	opts := testOptions
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
		want []string
	}{
		// Reads deadline_ms as a Unix timestamp in milliseconds: every
		// deadline Brain sends is long past, so every execute that carries
		// one answers timeout at once.
		{name: "deadline-as-timestamp", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			if cmd.Operation.Request.DeadlineMs != nil {
				past := int64(0)
				cmd.Operation.Request.DeadlineMs = &past
			}
			return nil
		}), want: []string{"deadline/timeout"}},
		// Serves a command with a wrong token before refusing it.
		{name: "serves-then-refuses", wrap: servesThenRefuses, want: []string{"auth/wrong-token"}},
		// Keeps deadline_ms in a signed 32-bit millisecond timer, which a
		// longer deadline overflows: the timer fires at once and the
		// execute answers timeout however far off its deadline is.
		{name: "deadline-32-bit-timer", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			if d := cmd.Operation.Request.DeadlineMs; d != nil && *d > math.MaxInt32 {
				*d = 0
			}
			return nil
		}), want: []string{"deadline/timeout"}},
		// Still runs turn and invoke, which are not environment operations.
		{name: "legacy-requests", wrap: legacyRequests, want: []string{"failure/unknown-request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, tc.wrap)
			}, &opts)
			got := report.Failed()
			for _, id := range tc.want {
				if !slices.Contains(got, id) {
					t.Errorf("failed cases %v, want %s among them\n%s", got, id, details(report))
				}
			}
			for _, r := range report.Results {
				if r.Status == conformance.Fail && !strings.Contains(strings.Join(r.Log, "\n"), "rule: ") {
					t.Errorf("%s failed without naming a rule: %v", r.ID, r.Log)
				}
			}
		})
	}
}

// TestEarlyTimerWithinSlackPasses: a provider whose timer fires a few
// milliseconds before deadline_ms (as a JavaScript timer may) passes
// deadline/timeout; one that reads the deadline as a timestamp does not
// (TestBrokenProvidersUnnoticedElsewhere).
func TestEarlyTimerWithinSlackPasses(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"deadline/timeout"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	early := rewriting(func(cmd *envapi.Command) *envapi.Response {
		if d := cmd.Operation.Request.DeadlineMs; d != nil && *d > 5 {
			*d -= 5
		}
		return nil
	})
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, sdk, early)
	}, &opts)
	if failed := report.Failed(); len(failed) != 0 {
		t.Fatalf("a timer 5 ms early failed %v\n%s", failed, details(report))
	}
}
