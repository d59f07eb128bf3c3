package conformance_test

import (
	"bytes"
	"fmt"
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

// cancelTargets records the target_sequence of every cancel that passes.
type cancelTargets struct {
	mu   sync.Mutex
	seqs []uint64
}

func (c *cancelTargets) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if cmd, err := envapi.DecodeCommand(body); err == nil && cmd.Operation.Request.Type == envapi.RequestCancel {
			c.mu.Lock()
			if seq := cmd.Operation.Request.TargetSequence; !slices.Contains(c.seqs, seq) {
				c.seqs = append(c.seqs, seq)
			}
			c.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func (c *cancelTargets) list() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seqs)
}

// TestCancelOfRefusedAnswerNamesTarget: a provider that answers every
// operation with another sequence (answers Brain refuses) and stops every
// execute of the cancel's binding fails cancel/running, and the failure
// names the sequence the cancels targeted, not the one the refused answer
// to the cancelled execute carried.
func TestCancelOfRefusedAnswerNamesTarget(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"cancel/running"}
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	targets := &cancelTargets{}
	wholeBinding := cancelsAlike(func(r, t envapi.Operation) bool {
		return r.SessionID == t.SessionID && r.Environment == t.Environment
	})
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, sdk, func(h http.Handler) http.Handler {
			return targets.wrap(wrongSequence(wholeBinding(h)))
		})
	}, &opts)
	if got := report.Failed(); !slices.Equal(got, opts.Run) {
		t.Fatalf("failed cases %v, want %v\n%s", got, opts.Run, details(report))
	}
	seqs := targets.list()
	if len(seqs) != 1 {
		t.Fatalf("the cancels targeted sequences %v, want one", seqs)
	}
	log := strings.Join(report.Results[0].Log, "\n")
	want := fmt.Sprintf("a cancel of sequence %d of session", seqs[0])
	if !strings.Contains(log, want) || !strings.Contains(log, "also stopped an execute on the same binding") {
		t.Errorf("the failure does not say that the cancel of sequence %d stopped the execute on the same binding (%q):\n%s", seqs[0], want, log)
	}
	if wrong := fmt.Sprintf("a cancel of sequence %d of session", seqs[0]+1); strings.Contains(log, wrong) {
		t.Errorf("the failure names the refused answer's sequence %d as the cancel's target:\n%s", seqs[0]+1, log)
	}
}
