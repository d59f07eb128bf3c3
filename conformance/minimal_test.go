package conformance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// minimal is the smallest provider the package documentation of envsdk
// describes: Base plus one Execute, no binding state of its own.
type minimal struct{ envsdk.Base }

func (minimal) Execute(_ *envsdk.Ctx, x *envsdk.Execution) (envapi.Receipt, error) {
	if string(x.Implementation) != `"echo"` {
		return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, "only echo runs here")
	}
	return envsdk.Output(map[string]json.RawMessage{"echo": x.Input})
}

// TestMinimalProvider: a provider of one Execute, written from the envsdk
// documentation alone, passes every case that applies to it; the rest are
// skipped for the roles and capabilities it does not describe.
func TestMinimalProvider(t *testing.T) {
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		h := envsdk.NewHandler(minimal{}, &envsdk.Options{Token: "minimal-token", StopGrace: time.Second})
		return conformance.Target{
			BaseURL: conformance.ServeHandler(ct, h),
			Token:   "minimal-token",
			Executes: map[string]conformance.Descriptor{
				conformance.RoleEcho: {Implementation: json.RawMessage(`"echo"`), Input: json.RawMessage(`{"n":1}`), Check: expectJSON(`{"echo":{"n":1}}`)},
			},
		}
	}, &conformance.Options{Grace: 2 * time.Second, Timeout: 30 * time.Second})
	if failed := report.Failed(); len(failed) > 0 {
		t.Errorf("the minimal provider failed %v\n%s", failed, details(report))
	}
	// The cases it must pass are run, not skipped.
	for _, id := range []string{"lifecycle/duplicate-setup", "lifecycle/after-teardown", "failure/well-formed", "exec/at-most-once", "contract/echo"} {
		found := false
		for _, r := range report.Results {
			if r.ID == id && r.Status == conformance.Pass {
				found = true
			}
		}
		if !found {
			t.Errorf("%s did not pass", id)
		}
	}
}
