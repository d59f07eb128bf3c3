package envsdk_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// holding keeps a resource per binding from setup to teardown, and answers
// setup with the on_turn_end method it is given.
type holding struct {
	envsdk.Base
	mu        sync.Mutex
	onTurnEnd string
	held      map[string]bool
}

func (p *holding) Setup(c *envsdk.Ctx) (envsdk.SetupResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held[c.BindingKey()] = true
	return envsdk.SetupResult{OnTurnEnd: p.onTurnEnd}, nil
}

func (p *holding) Teardown(c *envsdk.Ctx) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, c.BindingKey())
	return nil
}

func (p *holding) Methods() map[string]envsdk.Method {
	return map[string]envsdk.Method{
		"release": {Run: func(*envsdk.Ctx, json.RawMessage) (any, error) { return nil, nil }},
	}
}

func (p *holding) holds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// A setup answered with a failure because its on_turn_end is not a method
// name leaves no binding: what the provider set up is released, and a
// later setup of the binding runs instead of answering already_exists.
func TestSetupWithAMalformedOnTurnEndLeavesNoBinding(t *testing.T) {
	for _, untracked := range []bool{false, true} {
		p := &holding{onTurnEnd: "not a method!", held: map[string]bool{}}
		srv := serve(t, p, &envsdk.Options{Token: token, UntrackedBindings: untracked})
		r := send(t, srv, command(1, envapi.Setup(nil)))
		wantReceipt(t, "a setup answering a malformed on_turn_end", r, envapi.ReceiptFailure, envapi.CodeInvalidOutput)
		if !strings.Contains(r.Receipt.Message, "on_turn_end") {
			t.Errorf("the failure does not name on_turn_end: %s", r.Receipt.Message)
		}
		if n := p.holds(); n != 0 {
			t.Errorf("untracked %v: the refused setup left %d bindings held by the provider", untracked, n)
		}
		p.mu.Lock()
		p.onTurnEnd = "release"
		p.mu.Unlock()
		r = send(t, srv, command(2, envapi.Setup(nil)))
		wantReceipt(t, "the next setup", r, envapi.ReceiptAccepted, "")
		if r.Receipt.OnTurnEnd != "release" {
			t.Errorf("the next setup answered on_turn_end %q", r.Receipt.OnTurnEnd)
		}
	}
}

// A setup whose on_turn_end names a method the provider does not serve is
// refused the same way: Brain would call it after every turn and record
// each unsupported answer as a failed cleanup.
func TestSetupWithAnUnservedOnTurnEndLeavesNoBinding(t *testing.T) {
	p := &holding{onTurnEnd: "sweep", held: map[string]bool{}}
	srv := serve(t, p, nil)
	r := send(t, srv, command(1, envapi.Setup(nil)))
	wantReceipt(t, "a setup answering an on_turn_end it does not serve", r, envapi.ReceiptFailure, envapi.CodeInvalidOutput)
	if !strings.Contains(r.Receipt.Message, `"sweep"`) {
		t.Errorf("the failure does not name the method: %s", r.Receipt.Message)
	}
	if n := p.holds(); n != 0 {
		t.Errorf("the refused setup left %d bindings held by the provider", n)
	}
}
