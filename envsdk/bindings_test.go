package envsdk_test

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func wantReceipt(t *testing.T, what string, r envapi.Response, typ envapi.ReceiptType, code string) {
	t.Helper()
	if r.Receipt.Type != typ || r.Receipt.Code != code {
		t.Errorf("%s answered %q %q (%s), want %q %q", what, r.Receipt.Type, r.Receipt.Code, r.Receipt.Message, typ, code)
	}
}

// TestHandlerTracksBindings: a provider that keeps no binding state (it
// embeds Base) still refuses a duplicate setup and operations after
// teardown, without the provider seeing them.
func TestHandlerTracksBindings(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, nil)
	wantReceipt(t, "setup", send(t, srv, command(1, envapi.Setup(nil))), envapi.ReceiptAccepted, "")
	wantReceipt(t, "execute", send(t, srv, execute(2, "echo", nil, nil)), envapi.ReceiptResult, "")
	before := p.calls.Load()
	wantReceipt(t, "a second setup", send(t, srv, command(3, envapi.Setup(nil))), envapi.ReceiptFailure, envapi.CodeAlreadyExists)
	if p.calls.Load() != before {
		t.Errorf("the duplicate setup reached the provider")
	}
	wantReceipt(t, "teardown", send(t, srv, command(4, envapi.Teardown())), envapi.ReceiptAccepted, "")
	wantReceipt(t, "a second teardown", send(t, srv, command(5, envapi.Teardown())), envapi.ReceiptAccepted, "")
	before = p.calls.Load()
	wantReceipt(t, "execute after teardown", send(t, srv, execute(6, "echo", nil, nil)), envapi.ReceiptFailure, envapi.CodeUnavailable)
	wantReceipt(t, "call after teardown", send(t, srv, command(7, envapi.Call("inspect", []byte(`{}`)))), envapi.ReceiptFailure, envapi.CodeUnavailable)
	if p.calls.Load() != before {
		t.Errorf("an operation after teardown reached the provider")
	}
	// A failed setup does not count as set up: the next one runs.
	wantReceipt(t, "setup again", send(t, srv, command(8, envapi.Setup(nil))), envapi.ReceiptAccepted, "")
	wantReceipt(t, "execute after setting up again", send(t, srv, execute(9, "echo", nil, nil)), envapi.ReceiptResult, "")
	bad := command(10, envapi.Request{Type: envapi.RequestSetup, Configuration: []byte(`{"size":99}`)})
	other := envsdk.Options{Token: token}
	srv2 := serve(t, newTestProvider(), &other)
	wantReceipt(t, "an invalid setup", send(t, srv2, bad), envapi.ReceiptFailure, envapi.CodeInvalidConfiguration)
	wantReceipt(t, "a valid setup after it", send(t, srv2, command(11, envapi.Setup(nil))), envapi.ReceiptAccepted, "")
}

// TestUntrackedBindings: a provider that opts out sees every setup and
// operation itself.
func TestUntrackedBindings(t *testing.T) {
	p := newTestProvider()
	srv := serve(t, p, &envsdk.Options{Token: token, UntrackedBindings: true})
	wantReceipt(t, "setup", send(t, srv, command(1, envapi.Setup(nil))), envapi.ReceiptAccepted, "")
	wantReceipt(t, "a second setup", send(t, srv, command(2, envapi.Setup(nil))), envapi.ReceiptAccepted, "")
	wantReceipt(t, "teardown", send(t, srv, command(3, envapi.Teardown())), envapi.ReceiptAccepted, "")
	wantReceipt(t, "execute after teardown", send(t, srv, execute(4, "echo", nil, nil)), envapi.ReceiptResult, "")
	if n := p.calls.Load(); n != 3 {
		t.Errorf("the provider saw %d setups and executes, want 3", n)
	}
}
