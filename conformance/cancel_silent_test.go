package conformance_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestCancelIgnoredSaysWhatWasSent: when the cancelled execute does not
// answer within the grace, the failure shows the execute that was
// cancelled, the cancel sent for it and how the provider answered that
// cancel, with what was expected, so that the author can tell a cancel
// the provider took and did not act on from one it never saw.
func TestCancelIgnoredSaysWhatWasSent(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"cancel/running"}
	opts.Grace = 500 * time.Millisecond
	sdk := envsdk.Options{Token: refToken, StopGrace: time.Second}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		return serveReference(ct, newReference, sdk, rewriting(func(cmd *envapi.Command) *envapi.Response {
			if cmd.Operation.Request.Type != envapi.RequestCancel {
				return nil
			}
			r := envapi.NewResponse(cmd.Operation.Sequence, envapi.Accepted())
			return &r
		}))
	}, &opts)
	if got := report.Failed(); !slices.Equal(got, opts.Run) {
		t.Fatalf("failed %v, want %v\n%s", got, opts.Run, details(report))
	}
	log := strings.Join(report.Results[0].Log, "\n")
	for _, want := range []string{`"type":"execute"`, `"type":"cancel"`, `"target_sequence"`, `{"type":"accepted"}`, "want failure cancelled"} {
		if !strings.Contains(log, want) {
			t.Errorf("the failure does not show %s:\n%s", want, log)
		}
	}
}
