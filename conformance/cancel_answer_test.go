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
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// cancelAnswered passes every command on and rewrites the answer to a
// cancel with f.
func cancelAnswered(f func(cmd envapi.Command, resp *envapi.Response)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := &buffered{header: http.Header{}, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			out := rec.body.Bytes()
			if cmd, err := envapi.DecodeCommand(body); err == nil && cmd.Operation.Request.Type == envapi.RequestCancel {
				if resp, err := envapi.DecodeResponse(out); err == nil {
					f(cmd, &resp)
					out, _ = json.Marshal(resp)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.status)
			_, _ = w.Write(out)
		})
	}
}

// TestCancelAnswersChecked: Brain refuses the answer to a cancel that names
// the cancelled execute's sequence instead of its own, or that is not
// accepted, failure or unknown; a provider that answers either way fails,
// naming the rule, instead of passing.
func TestCancelAnswersChecked(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"contract/echo", "cancel/running"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	for _, tc := range []struct {
		name string
		f    func(cmd envapi.Command, resp *envapi.Response)
		want []string
		says string
	}{
		{name: "target-sequence", f: func(cmd envapi.Command, resp *envapi.Response) {
			resp.Sequence = cmd.Operation.Request.TargetSequence
		}, want: []string{"contract/echo"}, says: "a cancel of the finished execute answered sequence"},
		{name: "result", f: func(_ envapi.Command, resp *envapi.Response) {
			resp.Receipt = envapi.Result(json.RawMessage(`{"cancelled":true}`))
		}, want: []string{"contract/echo", "cancel/running"}, says: `answered "result", want accepted, failure or unknown`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, sdk, cancelAnswered(tc.f))
			}, &opts)
			if got := report.Failed(); !slices.Equal(got, tc.want) {
				t.Fatalf("failed %v, want %v\n%s", got, tc.want, details(report))
			}
			for _, r := range report.Results {
				if r.Status != conformance.Fail {
					continue
				}
				msg := strings.Join(r.Log, "\n")
				if !strings.Contains(msg, tc.says) || !strings.Contains(msg, "a cancel's own, not its target_sequence") {
					t.Errorf("%s does not say what is wrong (%q) and which rule:\n%s", r.ID, tc.says, msg)
				}
			}
		})
	}
}
