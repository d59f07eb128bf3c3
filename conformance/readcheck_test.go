package conformance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// A read descriptor that checks nothing cannot tell one binding's state
// from another's: the cases that need the check say the target
// description lacks it, instead of blaming the provider's isolation.
func TestReadWithoutCheckIsADescriptionError(t *testing.T) {
	opts := testOptions
	opts.Run = []string{"concurrency/isolated-bindings", "restart/binding"}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		tg := serveReference(ct, newReference, envsdk.Options{Token: refToken, StopGrace: time.Second}, nil)
		read := tg.Executes[conformance.RoleRead]
		read.Check = nil
		tg.Executes[conformance.RoleRead] = read
		return tg
	}, &opts)
	for _, r := range report.Results {
		log := strings.Join(r.Log, "\n")
		if r.Status != conformance.Fail || !strings.Contains(log, "read descriptor has no check") || strings.Contains(log, "rule: ") {
			t.Errorf("%s: %s, want a failure naming the read descriptor's missing check (not a rule):\n%s", r.ID, r.Status, log)
		}
	}

	// A profile says so before anything runs.
	_, err := conformance.ParseProfile([]byte(`{"executes":{
		"echo":{"implementation":{"name":"echo"},"input":{}},
		"read":{"implementation":{"name":"read"},"input":{"key":"k"}}}}`))
	if err == nil || !strings.Contains(err.Error(), "executes.read") {
		t.Errorf("a profile whose read gives neither output nor output_contains: %v, want an error naming executes.read", err)
	}
}
