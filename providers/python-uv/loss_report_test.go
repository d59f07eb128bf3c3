package pythonuv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestSlowLossReportDoesNotHoldTheAnswer: an execute that finds its
// installation lost answers resource_lost within its deadline even when
// Brain is slow to take the binding's report of the loss; the report does
// not hold the answer past the deadline, where it would be answered
// timeout and the loss not said. The loss is still reported.
func TestSlowLossReportDoesNotHoldTheAnswer(t *testing.T) {
	r := newRig(t, nil)
	c := r.attach("s1")
	if rc := r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":1}`), envtest.Millis(120_000))); rc.Type != envapi.ReceiptResult {
		t.Fatalf("first execute: %s", describe(rc))
	}
	if err := os.RemoveAll(filepath.Join(r.root, "plain", ".venv")); err != nil {
		t.Fatal(err)
	}
	r.brain.Inject(envtest.MethodReporter, envtest.Fault{Kind: envtest.SlowReply, Delay: 3 * reportTimeout, Times: 1})
	wantFailure(t, r.post(c.Execute(impl("plain"), json.RawMessage(`{"n":2}`), envtest.Millis(2_000))), envapi.CodeResourceLost)
	if obs := reportsAtLeast(t, r, 1); obs[0].Code != envapi.CodeResourceLost || obs[0].Resource != "python_project:plain" {
		t.Fatalf("report %+v", obs[0])
	}
}
