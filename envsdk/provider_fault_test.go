package envsdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// check is a provider function of a common shape: it answers a nil *Error
// when the input is fine, which becomes a non-nil error once returned as
// an error.
func check(bad bool) *envsdk.Error {
	if bad {
		return envsdk.Fail(envapi.CodeInvalidInput, "bad input")
	}
	return nil
}

// nilErrorProvider answers every operation with a nil *envsdk.Error in a
// non-nil error.
type nilErrorProvider struct{ envsdk.Base }

func (nilErrorProvider) Setup(*envsdk.Ctx) (envsdk.SetupResult, error) {
	return envsdk.SetupResult{}, check(false)
}

func (nilErrorProvider) Execute(*envsdk.Ctx, *envsdk.Execution) (envapi.Receipt, error) {
	return envapi.Result(json.RawMessage(`1`)), check(false)
}

func (nilErrorProvider) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"inspect": {Run: func(*envsdk.Ctx, json.RawMessage) (any, error) { return nil, check(false) }},
		"explode": {Run: func(*envsdk.Ctx, json.RawMessage) (any, error) { return panicky{}, nil }},
	}
}

// panicky is a method output whose JSON encoding panics.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("encoder boom") }

// A provider that returns a nil *Error as its error gets a failure
// receipt, environment_failed, not a dropped connection: the provider's
// mistake is answered as any other provider error is.
func TestNilTypedErrorIsAnswered(t *testing.T) {
	srv := serve(t, nilErrorProvider{}, nil)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"setup", command(1, envapi.Setup(nil))},
		{"execute", execute(2, "echo", nil, nil)},
		{"call", command(3, envapi.Call("inspect", json.RawMessage(`{}`)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := send(t, srv, tc.body).Receipt
			if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeEnvironmentFailed {
				t.Fatalf("answered %+v, want the failure environment_failed", r)
			}
		})
	}
}

// The same nil *Error after a cancel keeps the stop as the answer.
func TestNilTypedErrorAfterDeadline(t *testing.T) {
	srv := serve(t, nilAfterStop{}, nil)
	ms := int64(20)
	r := send(t, srv, execute(1, "x", &ms, nil)).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeTimeout {
		t.Fatalf("answered %+v, want the failure timeout", r)
	}
}

type nilAfterStop struct{ envsdk.Base }

func (nilAfterStop) Execute(c *envsdk.Ctx, _ *envsdk.Execution) (envapi.Receipt, error) {
	<-c.Context().Done()
	return envapi.Receipt{}, check(false)
}

// A method whose output panics while it is encoded is answered as a
// panicking method is, environment_failed, and the server keeps serving.
func TestMethodOutputPanicIsAnswered(t *testing.T) {
	srv := serve(t, nilErrorProvider{}, nil)
	r := send(t, srv, command(1, envapi.Call("explode", json.RawMessage(`{}`)))).Receipt
	if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeEnvironmentFailed || !strings.Contains(r.Message, "encoder boom") {
		t.Fatalf("answered %+v, want the failure environment_failed naming the panic", r)
	}
}
