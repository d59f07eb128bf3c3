package conformance_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// stuckSetup is a provider whose setup never returns, whatever its
// context says (a deadlock).
type stuckSetup struct {
	minimal
	release chan struct{}
}

func (s stuckSetup) Setup(*envsdk.Ctx) (envsdk.SetupResult, error) {
	<-s.release
	return envsdk.SetupResult{}, nil
}

// TestHandlerThatNeverReturnsIsReported: a Go provider served with
// ServeHandler whose handler never returns fails its case with a message
// saying so, instead of holding the run (and the CI job) forever.
func TestHandlerThatNeverReturnsIsReported(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	defer conformance.SetServeCloseWait(500 * time.Millisecond)()
	done := make(chan conformance.Report, 1)
	go func() {
		done <- conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
			h := envsdk.NewHandler(stuckSetup{release: release}, &envsdk.Options{Token: "stuck-token", StopGrace: time.Second})
			return conformance.Target{
				BaseURL: conformance.ServeHandler(ct, h),
				Token:   "stuck-token",
				Executes: map[string]conformance.Descriptor{
					conformance.RoleEcho: {Implementation: json.RawMessage(`"echo"`), Input: json.RawMessage(`{}`)},
				},
			}
		}, &conformance.Options{Timeout: time.Second, Grace: time.Second, Run: []string{"contract/echo"}})
	}()
	var report conformance.Report
	select {
	case report = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Check has not returned: a handler that never returns holds the run")
	}
	if len(report.Results) != 1 || report.Results[0].Status != conformance.Fail {
		t.Fatalf("want contract/echo to fail:\n%s", details(report))
	}
	if msg := strings.Join(report.Results[0].Log, "\n"); !strings.Contains(msg, "never returned") {
		t.Errorf("the failure does not say the handler never returned:\n%s", msg)
	}
}
