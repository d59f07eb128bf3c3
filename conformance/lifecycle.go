package conformance

import (
	"encoding/json"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

func lifecycleFull(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	p.mustTool(c, d, "echo after setup")
	p.accepted(ruleLifecycle, "detach", c.Detach())
	p.accepted(ruleLifecycle, "teardown", c.Teardown())
}

func lifecycleTeardownRepeatable(p *probe) {
	c := p.setup()
	p.accepted(ruleTeardown, "teardown", c.Teardown())
	p.accepted(ruleTeardown, "a second teardown", c.Teardown())
}

func lifecycleAfterTeardown(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	p.accepted(ruleTeardown, "teardown", c.Teardown())

	ex, seq := p.execute(c, d, nil)
	if err := valid(ex); err != nil {
		p.fatal(ruleTeardown, ex, "execute after teardown: %v", err)
	}
	if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure {
		p.fail(ruleTeardown, ex, "execute after teardown answered %q, want a failure receipt", rc.Type)
	}
	ex = p.must(ruleTeardown, c.Call("conformance-probe", json.RawMessage(`{}`)))
	if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure {
		p.fail(ruleTeardown, ex, "call after teardown answered %q, want a failure receipt", rc.Type)
	}
	// A refused execute must not have run: no callback used its grant.
	if calls := p.brain.CallsFor(p.session, seq); len(calls) > 0 {
		p.fail(ruleTeardown, nil, "the execute refused after teardown still called back: %v", calls)
	}
}

func lifecycleDuplicateSetup(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	ex := p.must(ruleDuplicate, c.Setup(p.tg.SetupConfiguration))
	rc := ex.receipt()
	switch p.tg.DuplicateSetup {
	case DuplicateAccepted:
		if rc.Type != envapi.ReceiptAccepted {
			p.fail(ruleDuplicate, ex, "the target documents duplicate setup as accepted, got %q %s", rc.Type, rc.Code)
		}
	default:
		if rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeAlreadyExists {
			p.fail(ruleDuplicate, ex, "a second setup of one binding answered %q %s, want failure %s (or declare DuplicateAccepted)", rc.Type, rc.Code, envapi.CodeAlreadyExists)
		}
	}
}
