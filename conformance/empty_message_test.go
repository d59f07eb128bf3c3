package conformance_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// terse answers every execute with a failure that has no message.
type terse struct{ envsdk.Base }

func (terse) Execute(*envsdk.Ctx, *envsdk.Execution) (envapi.Receipt, error) {
	return envapi.Receipt{}, envsdk.Fail(envapi.CodeUnsupported, "")
}

// A failure with an empty message is one Brain takes and passes on
// unchanged (the wire bounds a message at 4096 characters, nothing more):
// the failure case passes it.
func TestFailureWithAnEmptyMessageIsWellFormed(t *testing.T) {
	if _, err := envapi.DecodeReceipt(json.RawMessage(`{"type":"failure","code":"unsupported","message":"","retryable":false}`)); err != nil {
		t.Fatalf("Brain's decoder refuses an empty message: %v", err)
	}
	report := conformance.Check(t.Context(), func(ct conformance.T) conformance.Target {
		h := envsdk.NewHandler(terse{}, &envsdk.Options{Token: "terse-token", StopGrace: time.Second})
		return conformance.Target{BaseURL: conformance.ServeHandler(ct, h), Token: "terse-token"}
	}, &conformance.Options{Run: []string{"failure/well-formed"}, Timeout: 30 * time.Second})
	if len(report.Results) != 1 || report.Results[0].Status != conformance.Pass {
		t.Fatalf("failure/well-formed against empty messages:\n%s", details(report))
	}
}
