package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// wantUnsupported fails the case unless ex answers failure unsupported.
func (p *probe) wantUnsupported(ex *exchange, what string) {
	p.t.Helper()
	if err := valid(ex); err != nil {
		p.fail(ruleUnsupport, ex, "%s: %v", what, err)
		return
	}
	if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeUnsupported {
		p.fail(ruleUnsupport, ex, "%s answered %q %s, want failure %s", what, rc.Type, rc.Code, envapi.CodeUnsupported)
	}
}

func failureUnknownRequest(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	// turn and invoke were operations of older protocols; they are not
	// environment operations.
	for _, typ := range []envapi.RequestType{"conformance_no_such_request", "turn", "invoke"} {
		cmd := c.Next(envapi.Request{Type: typ})
		ex := p.send(cmd)
		if ex.Status == http.StatusBadRequest {
			continue // refused as malformed: allowed
		}
		if err := valid(ex); err != nil {
			p.fail(ruleUnknownReq, ex, "a request of type %q: %v", typ, err)
			continue
		}
		if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeUnsupported {
			p.fail(ruleUnknownReq, ex, "a request of type %q answered %q %s, want 400 or failure %s", typ, rc.Type, rc.Code, envapi.CodeUnsupported)
		}
	}
}

// unsupportedDescriptor is the target's unsupported descriptor or one no
// provider knows.
func (p *probe) unsupportedDescriptor() Descriptor {
	if d, ok := p.tg.Executes[RoleUnsupported]; ok {
		return d
	}
	return Descriptor{
		Implementation: json.RawMessage(`{"type":"conformance_no_such_descriptor","name":"conformance"}`),
		Input:          json.RawMessage(`{}`),
	}
}

func failureUnknownDescriptor(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	ex, seq := p.execute(c, p.unsupportedDescriptor(), nil)
	p.wantUnsupported(ex, "an execute of an unknown descriptor")
	// Nothing ran: no service of its grant was called (a diagnostic
	// telemetry record aside), so no event, result or outcome of it
	// reached Brain.
	ran := p.brain.Filter(func(call envtest.Call) bool {
		return envtest.Execution(p.session, seq, "")(call) && call.Method != envapi.MethodTelemetry
	})
	if len(ran) > 0 {
		p.fail(ruleUnsupport, ex, "an unsupported execute called %d services of its grant, so something ran: %v", len(ran), ran)
	}
}

func failureUnknownMethod(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	p.wantUnsupported(p.send(c.Call("conformance-no-such-method", json.RawMessage(`{}`))), "a call of an undeclared method")
}

// wellFormed checks the raw JSON of a failure receipt field by field.
func wellFormed(body []byte) error {
	if !utf8.Valid(body) {
		return fmt.Errorf("body is not UTF-8 (JSON between systems is, RFC 8259)")
	}
	var doc struct {
		Receipt map[string]json.RawMessage `json:"receipt"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("body is not JSON: %s", excerpt([]byte(err.Error()), 160))
	}
	r := doc.Receipt
	var typ, code, message string
	var retryable bool
	if err := json.Unmarshal(r["type"], &typ); err != nil || typ != "failure" {
		return fmt.Errorf("receipt type is %s, want \"failure\"", excerpt(r["type"], 80))
	}
	if err := json.Unmarshal(r["code"], &code); err != nil || !envapi.ValidIdentifier(code) {
		return fmt.Errorf("code %s is not an identifier string", excerpt(r["code"], 80))
	}
	// The wire bounds a message and nothing more: an empty one is
	// carried, and passed on, unchanged.
	if err := json.Unmarshal(r["message"], &message); err != nil || utf8.RuneCountInString(message) > envapi.MaxMessageLen {
		return fmt.Errorf("message %s is not a string of at most %d characters", excerpt(r["message"], 80), envapi.MaxMessageLen)
	}
	raw, ok := r["retryable"]
	if !ok {
		return fmt.Errorf("retryable is missing")
	}
	if err := json.Unmarshal(raw, &retryable); err != nil {
		return fmt.Errorf("retryable %s is not a boolean", excerpt(raw, 80))
	}
	for k := range r {
		switch k {
		case "type", "code", "message", "retryable", "details":
		default:
			return fmt.Errorf("unexpected field %q", excerpt([]byte(k), 80))
		}
	}
	return nil
}

func failureWellFormed(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	for _, probe := range []struct {
		what string
		cmd  envapi.Command
	}{
		{"unknown descriptor", c.Execute(p.unsupportedDescriptor().Implementation, p.unsupportedDescriptor().Input, nil)},
		{"unknown method", c.Call("conformance-no-such-method", json.RawMessage(`{}`))},
		{"duplicate setup", c.Setup(p.tg.SetupConfiguration)},
	} {
		ex := p.send(probe.cmd)
		if ex.Err != nil && ex.Status == 0 {
			p.fail(ruleFailure, ex, "%s: %v", probe.what, ex.Err)
			continue
		}
		if ex.Status != 200 {
			p.fail(ruleFailure, ex, "%s answered %d, want 200 with a failure receipt", probe.what, ex.Status)
			continue
		}
		if probe.what == "duplicate setup" && p.tg.DuplicateSetup == DuplicateAccepted {
			continue
		}
		if err := wellFormed(ex.Body); err != nil {
			p.fail(ruleFailure, ex, "%s: the failure receipt is not well formed: %v", probe.what, err)
		}
	}
}
