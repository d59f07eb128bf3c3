package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// dedupesBySequence refuses an execute as a repeat when any execute had
// its sequence before, whatever its session: a provider that keys the
// executions it has run by sequence alone.
func dedupesBySequence(next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[uint64]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if cmd, err := envapi.DecodeCommand(body); err == nil && cmd.Operation.Request.Type == envapi.RequestExecute {
			seq := cmd.Operation.Sequence
			mu.Lock()
			repeat := seen[seq]
			seen[seq] = true
			mu.Unlock()
			if repeat {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(envapi.NewResponse(seq, envapi.Unknown("this sequence was already dispatched")))
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// TestProvidersMixingSessions runs the suite against providers that tell
// commands apart by less than session, environment and sequence. Brain
// numbers each session's records from 1 and every session may name an
// environment "sandbox", so one provider sees the same sequences and names
// from many sessions: each of these fails, naming the rule it breaks,
// though every case runs against a fresh provider.
func TestProvidersMixingSessions(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/", "concurrency/", "lifecycle/", "contract/"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for _, tc := range []struct {
		name     string
		provider func() *reference
		wrap     func(http.Handler) http.Handler
		want     []string
		rules    []string
	}{
		{name: "dedupes-by-sequence", wrap: dedupesBySequence,
			want: []string{"exec/at-most-once"}, rules: []string{"another session"}},
		{name: "bindings-by-name", provider: func() *reference { p := newReference(); p.byName = true; return p },
			want: []string{"exec/at-most-once", "concurrency/isolated-bindings"}, rules: []string{"bindings are isolated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.provider == nil {
				tc.provider = newReference
			}
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, tc.provider, sdk, tc.wrap)
			}, &opts)
			got := report.Failed()
			if !slices.Equal(got, tc.want) {
				t.Errorf("failed cases %v, want %v\n%s", got, tc.want, details(report))
			}
			for _, r := range report.Results {
				log := strings.Join(r.Log, "\n")
				if r.Status != conformance.Fail {
					continue
				}
				for _, rule := range tc.rules {
					if !strings.Contains(log, rule) {
						t.Errorf("%s failed without citing %q: %s", r.ID, rule, log)
					}
				}
			}
		})
	}
}

// cancelsAlike stops, on every cancel, each execute in flight that alike
// reports as matching the cancel's target, besides the target itself: a
// provider that keys the executions it runs by less than session,
// environment and sequence.
func cancelsAlike(alike func(running, target envapi.Operation) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		var mu sync.Mutex
		running := map[*envapi.Operation]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			cmd, err := envapi.DecodeCommand(body)
			if err == nil && cmd.Operation.Request.Type == envapi.RequestExecute {
				op := &cmd.Operation
				mu.Lock()
				running[op] = true
				mu.Unlock()
				defer func() {
					mu.Lock()
					delete(running, op)
					mu.Unlock()
				}()
			}
			if err == nil && cmd.Operation.Request.Type == envapi.RequestCancel {
				target := cmd.Operation
				target.Sequence = cmd.Operation.Request.TargetSequence
				var also []envapi.Operation
				mu.Lock()
				for op := range running {
					same := op.SessionID == target.SessionID && op.Environment == target.Environment && op.Sequence == target.Sequence
					if !same && alike(*op, target) {
						also = append(also, *op)
					}
				}
				mu.Unlock()
				for _, op := range also {
					stop := cmd
					stop.Operation.SessionID, stop.Operation.Environment = op.SessionID, op.Environment
					stop.Operation.Binding, stop.Operation.Context, stop.Operation.Reporter = op.Binding, nil, nil
					stop.Operation.Request = envapi.Cancel(op.Sequence)
					data, _ := json.Marshal(stop)
					req := r.Clone(r.Context())
					req.Body = io.NopCloser(bytes.NewReader(data))
					req.ContentLength = int64(len(data))
					next.ServeHTTP(&buffered{header: http.Header{}}, req)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// TestCancelStopsOnlyItsTarget: a cancel stops the one execute it names.
// A provider that stops every execute of the cancel's binding, or every
// execute at the target's sequence whatever its session, fails
// cancel/running; the reference passes it (TestReference).
func TestCancelStopsOnlyItsTarget(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"cancel/running"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for name, alike := range map[string]func(running, target envapi.Operation) bool{
		"whole-binding": func(r, t envapi.Operation) bool {
			return r.SessionID == t.SessionID && r.Environment == t.Environment
		},
		"by-sequence": func(r, t envapi.Operation) bool { return r.Sequence == t.Sequence },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, cancelsAlike(alike))
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, opts.Run) {
				t.Fatalf("failed cases %v, want %v\n%s", got, opts.Run, details(report))
			}
			if log := strings.Join(report.Results[0].Log, "\n"); !strings.Contains(log, "rule: ") || !strings.Contains(log, "only") {
				t.Errorf("the failure does not name the rule it breaks:\n%s", log)
			}
		})
	}
}
