package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// finishTwice completes its echo itself and calls finish twice.
type finishTwice struct{ *reference }

func (p finishTwice) Execute(c *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	var d descriptor
	_ = json.Unmarshal(x.Implementation, &d)
	g := c.Request.Callback
	if d.Name != "echo" || g == nil {
		return p.reference.Execute(c, x)
	}
	if _, err := p.binding(c); err != nil {
		return envapi.Receipt{}, err
	}
	out, _ := json.Marshal(map[string]json.RawMessage{"echo": x.Input})
	in, _ := json.Marshal(envapi.ExecutionCall{Method: envapi.MethodFinish, Input: mustJSON(envapi.OK(out))})
	for range 2 {
		req, err := http.NewRequestWithContext(context.WithoutCancel(c.Context()), http.MethodPost, g.URL, bytes.NewReader(in))
		if err != nil {
			return envapi.Receipt{}, err
		}
		req.Header.Set("Authorization", "Bearer "+g.Token)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
	return envapi.Returned(nil), nil
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// rewriting applies f to every command a middleware can decode; f answers
// the command to pass on, or a response to send instead.
func rewriting(f func(cmd *envapi.Command) *envapi.Response) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if cmd, err := envapi.DecodeCommand(body); err == nil {
				if resp := f(&cmd); resp != nil {
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(resp)
					return
				}
				body, _ = json.Marshal(cmd)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// wrongSequence answers every operation with the sequence after its own.
func wrongSequence(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &buffered{header: http.Header{}, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if resp, err := envapi.DecodeResponse(body); err == nil {
			resp.Sequence++
			body, _ = json.Marshal(resp)
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.status)
		_, _ = w.Write(body)
	})
}

// runsRepeats hides a repeated execute from the handler's own refusal of
// repeats by moving it to a sequence of its own, and answers with the
// original sequence: the provider runs the repeat again.
func runsRepeats(next http.Handler) http.Handler { return movesRepeats(envapi.RequestExecute, next) }

// runsRepeatedCalls is runsRepeats for calls: the provider runs the
// method of a repeated call again.
func runsRepeatedCalls(next http.Handler) http.Handler { return movesRepeats(envapi.RequestCall, next) }

// movesRepeats moves every repeat of a command of type typ to a sequence
// of its own, and answers with the original sequence.
func movesRepeats(typ envapi.RequestType, next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]int{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cmd, err := envapi.DecodeCommand(body)
		orig := cmd.Operation.Sequence
		if err == nil && cmd.Operation.Request.Type == typ {
			key := envsdk.BindingKey(cmd.Operation) + "/" + strconv.FormatUint(orig, 10)
			mu.Lock()
			n := seen[key]
			seen[key]++
			mu.Unlock()
			if n > 0 {
				cmd.Operation.Sequence += uint64(n) << 40
				body, _ = json.Marshal(cmd)
			}
		}
		serveMoved(w, r, next, body, orig)
	})
}

// prefixToken lets a bearer token through when it is a prefix of the
// real one, as a provider that compares only as many bytes as it was
// sent does.
func prefixToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && tok != "" && strings.HasPrefix(refToken, tok) {
			r.Header.Set("Authorization", "Bearer "+refToken)
		}
		h.ServeHTTP(w, r)
	})
}

// serveMoved serves r with body, the command moved to a sequence of its
// own, through next, and answers next's answer with the command's
// original sequence orig.
func serveMoved(w http.ResponseWriter, r *http.Request, next http.Handler, body []byte, orig uint64) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rec := &buffered{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	out := rec.body.Bytes()
	if resp, err := envapi.DecodeResponse(out); err == nil && resp.Sequence != orig {
		resp.Sequence = orig
		out, _ = json.Marshal(resp)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.status)
	_, _ = w.Write(out)
}

type buffered struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *buffered) Header() http.Header         { return b.header }
func (b *buffered) WriteHeader(s int)           { b.status = s }
func (b *buffered) Write(p []byte) (int, error) { return b.body.Write(p) }

// TestBrokenProviders runs the suite against deliberately broken
// providers: each fails exactly the cases of the rule it breaks.
func TestBrokenProviders(t *testing.T) {
	const limit = 1 << 20
	opts := testOptions
	opts.MaxBodyBytes = limit
	// The rows run in parallel, each running its cases one at a time, so
	// that a loaded machine is not asked for every case of every row at
	// once; answers get more room than the reference run needs.
	opts.Serial = true
	opts.Grace = 4 * time.Second
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second, MaxBodyBytes: limit}
	noAuth := sdk
	noAuth.Token = ""

	for _, tc := range []struct {
		name     string
		provider func() *reference
		sdk      envsdk.Options
		wrap     func(http.Handler) http.Handler
		execute  func(p *reference) envsdk.Provider
		want     []string
	}{
		{name: "no-auth", sdk: noAuth, want: []string{"auth/missing-token", "auth/wrong-token"}},
		{name: "prefix-token", wrap: prefixToken, want: []string{"auth/wrong-token"}},
		{name: "wrong-sequence", wrap: wrongSequence, want: []string{"contract/echo"}},
		{name: "finish-twice", execute: func(p *reference) envsdk.Provider { return finishTwice{p} },
			want: []string{"exec/finish-once", "exec/lost-finish-ack"}},
		{name: "deadline-ignored", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			cmd.Operation.Request.DeadlineMs = nil
			return nil
		}), want: []string{"deadline/timeout", "deadline/cleanup-evidence"}}, // both send deadlines
		{name: "cancel-ignored", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			if cmd.Operation.Request.Type != envapi.RequestCancel {
				return nil
			}
			r := envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted())
			return &r
		}), want: []string{"cancel/running", "cancel/cleanup-evidence"}},
		{name: "shared-state", provider: func() *reference { p := newReference(); p.shared = true; return p },
			want: []string{"concurrency/isolated-bindings"}},
		{name: "runs-repeats", wrap: runsRepeats, want: []string{"exec/at-most-once", "exec/at-most-once-running"}},
		{name: "runs-repeats-in-flight", wrap: runsRepeatsInFlight, want: []string{"exec/at-most-once-running"}},
		// Its method's output ("report" answers the observation's
		// sequence) and its observations show each second run.
		{name: "runs-repeated-calls", wrap: runsRepeatedCalls, want: []string{"methods/at-most-once"}},
		// Only its observations show each second run.
		{name: "runs-repeated-calls-same-output", provider: func() *reference { p := newReference(); p.sameReport = true; return p },
			wrap: runsRepeatedCalls, want: []string{"methods/at-most-once"}},
		{name: "progress-then-finish", provider: func() *reference { p := newReference(); p.finishAfterProgress = true; return p },
			want: []string{"exec/progress-receipt"}},
		{name: "evidence-dropped", provider: func() *reference { p := newReference(); p.noEvidence = true; return p },
			want: []string{"deadline/cleanup-evidence", "cancel/cleanup-evidence"}},
		{name: "cleanup-replaces-cancel", wrap: cleanupReplacesCancel, want: []string{"cancel/cleanup-evidence"}},
		{name: "stops-misnumbered", wrap: stopsMisnumbered, want: []string{"contract/echo"}},
		{name: "allocates-per-caller", provider: func() *reference { p := newReference(); p.perCaller = true; return p },
			want: []string{"concurrency/shared-binding", "lazy/first-use"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.provider == nil {
				tc.provider = newReference
			}
			if tc.sdk.MaxBodyBytes == 0 {
				tc.sdk = sdk
			}
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveProvider(ct, func() envsdk.Provider {
					p := tc.provider()
					if tc.execute != nil {
						return tc.execute(p)
					}
					return p
				}, tc.sdk, tc.wrap)
			}, &opts)
			got := report.Failed()
			if !slices.Equal(got, tc.want) {
				t.Errorf("failed cases %v, want %v\n%s", got, tc.want, details(report))
			}
			if skipped := report.Skipped(); len(skipped) > 0 {
				t.Errorf("skipped cases %v, want none", skipped)
			}
			// Each expected failure names its rule and shows the exchange.
			for _, r := range report.Results {
				if r.Status == conformance.Fail && !strings.Contains(strings.Join(r.Log, "\n"), "rule: ") {
					t.Errorf("%s failed without naming a rule: %v", r.ID, r.Log)
				}
			}
		})
	}
}

func details(r conformance.Report) string {
	var b strings.Builder
	for _, res := range r.Results {
		if res.Status != conformance.Pass {
			fmt.Fprintf(&b, "%s %s:\n  %s\n", res.Status, res.ID, strings.Join(res.Log, "\n  "))
		}
	}
	return b.String()
}

// TestUnknownRequestAnswered400 runs the suite against a provider that
// refuses an unknown request type with 400 instead of a failure receipt:
// the protocol allows both, so it passes.
func TestUnknownRequestAnswered400(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"failure/unknown-request"}
	refuse := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if _, err := envapi.DecodeCommand(body); errors.Is(err, envapi.ErrUnsupported) {
				http.Error(w, `{"error":"unknown request type"}`, http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, refuse)
	}, &opts)
	if got := report.Passed(); !slices.Equal(got, opts.Run) {
		t.Errorf("passed %v, want %v\n%s", got, opts.Run, details(report))
	}
	// A 500, or a receipt of another kind, still fails.
	for name, answer := range map[string]func(w http.ResponseWriter, seq uint64){
		"500": func(w http.ResponseWriter, _ uint64) { http.Error(w, "boom", http.StatusInternalServerError) },
		"accepted": func(w http.ResponseWriter, seq uint64) {
			_ = json.NewEncoder(w).Encode(envapi.NewResponse(seq, envapi.Accepted()))
		},
	} {
		wrong := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if cmd, err := envapi.DecodeCommand(body); errors.Is(err, envapi.ErrUnsupported) {
					answer(w, cmd.Operation.Sequence)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				next.ServeHTTP(w, r)
			})
		}
		report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
			return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, wrong)
		}, &opts)
		if got := report.Failed(); !slices.Equal(got, opts.Run) {
			t.Errorf("%s: failed %v, want %v", name, got, opts.Run)
		}
	}
}
