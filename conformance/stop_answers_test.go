package conformance_test

import (
	"encoding/json"
	"net/http"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// rewritingAnswers applies f to every answer that decodes before it is
// sent.
func rewritingAnswers(f func(resp *envapi.Response)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &buffered{header: http.Header{}, status: http.StatusOK}
			next.ServeHTTP(rec, r)
			body := rec.body.Bytes()
			if resp, err := envapi.DecodeResponse(body); err == nil {
				f(&resp)
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
}

// stopped reports whether r answers an execute that was stopped.
func stopped(r envapi.Receipt) bool {
	return r.Type == envapi.ReceiptFailure && (r.Code == envapi.CodeTimeout || r.Code == envapi.CodeCancelled)
}

// cleanupReplacesCancel keeps the first stop cause of a timeout only: a
// cancelled execute whose cleanup failed answers the cleanup failure as
// its code, the cancel lost.
var cleanupReplacesCancel = rewritingAnswers(func(resp *envapi.Response) {
	if r := resp.Receipt; r.Code == envapi.CodeCancelled && stopped(r) && len(r.Details) > 0 {
		resp.Receipt = envapi.Failure("cleanup_failed", "the cleanup of the cancelled work failed", false, r.Details)
	}
})

// stopsMisnumbered answers an execute that was stopped, by its deadline or
// a cancel, with the next sequence (as a provider that writes those answers
// from the stopping command would): every other answer is right.
var stopsMisnumbered = rewritingAnswers(func(resp *envapi.Response) {
	if stopped(resp.Receipt) {
		resp.Sequence++
	}
})
