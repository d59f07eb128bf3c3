package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
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
		{name: "wrong-sequence", wrap: wrongSequence, want: []string{"contract/echo"}},
		{name: "finish-twice", execute: func(p *reference) envsdk.Provider { return finishTwice{p} },
			want: []string{"exec/finish-once", "exec/lost-finish-ack"}},
		{name: "deadline-ignored", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			cmd.Operation.Request.DeadlineMs = nil
			return nil
		}), want: []string{"deadline/timeout"}},
		{name: "cancel-ignored", wrap: rewriting(func(cmd *envapi.Command) *envapi.Response {
			if cmd.Operation.Request.Type != envapi.RequestCancel {
				return nil
			}
			r := envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted())
			return &r
		}), want: []string{"cancel/running"}},
		{name: "shared-state", provider: func() *reference { p := newReference(); p.shared = true; return p },
			want: []string{"concurrency/isolated-bindings"}},
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
