package conformance_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// finishingEcho serves the echo itself, answering returned with an output
// of padBytes and calling finish once: after its answer is written, as a
// provider that completes its Tools in the background does, or, with
// first, before answering, ignoring what finish answered. Other commands
// go to next.
func finishingEcho(padBytes int, first bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			cmd, err := envapi.DecodeCommand(body)
			var d descriptor
			op := cmd.Operation
			if err != nil || op.Request.Type != envapi.RequestExecute || op.Request.Callback == nil ||
				json.Unmarshal(op.Request.Implementation, &d) != nil || d.Name != "echo" {
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
				next.ServeHTTP(w, r)
				return
			}
			finish := func() {
				out := mustJSON(map[string]json.RawMessage{"echo": op.Request.Input})
				in := mustJSON(envapi.ExecutionCall{Method: envapi.MethodFinish, Input: mustJSON(envapi.OK(out))})
				req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, op.Request.Callback.URL, bytes.NewReader(in))
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+op.Request.Callback.Token)
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
			if first {
				finish()
			}
			pad := mustJSON(map[string]string{"pad": strings.Repeat("x", padBytes)})
			resp := mustJSON(envapi.NewResponse(op.Sequence, envapi.Returned(pad)))
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
			_, _ = w.Write(resp)
			w.(http.Flusher).Flush()
			if !first {
				finish()
			}
		})
	}
}

// TestFinishAfterTheAnswerPasses: a provider that answers returned and
// calls finish only after its answer is written passes
// exec/lost-finish-ack when that finish's acknowledgement is lost: its
// answer could not have known. However long the answer takes to read.
func TestFinishAfterTheAnswerPasses(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/lost-finish-ack"}
	opts.Serial = true
	for _, pad := range []int{0, 1 << 20} {
		for range 5 {
			report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
				return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, finishingEcho(pad, false))
			}, &opts)
			if failed := report.Failed(); len(failed) > 0 {
				t.Fatalf("an answer of %d bytes of output, finish after it: failed %v\n%s", pad, failed, details(report))
			}
		}
	}
}

// TestFinishBeforeTheAnswerMustAnswerUnknown: a provider that calls finish
// before answering and answers returned though the acknowledgement was
// lost fails exec/lost-finish-ack, however small its answer.
func TestFinishBeforeTheAnswerMustAnswerUnknown(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"exec/lost-finish-ack"}
	for _, pad := range []int{0, 1 << 20} {
		report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
			return serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, finishingEcho(pad, true))
		}, &opts)
		if failed := report.Failed(); len(failed) != 1 {
			t.Fatalf("an answer of %d bytes of output after an unacknowledged finish: failed %v, want %v\n%s", pad, failed, opts.Run, details(report))
		}
		if log := strings.Join(report.Results[0].Log, "\n"); !strings.Contains(log, "want unknown") {
			t.Errorf("the failure does not say why:\n%s", log)
		}
	}
}
