package conformance

import (
	"encoding/json"
	"slices"
	"sort"

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
	// Calls of the methods the provider has: one it does not have fails
	// whether the binding is torn down or not.
	for _, name := range p.afterTeardownCalls() {
		in, ok := p.tg.Capabilities.Methods[name]
		switch {
		case ok:
		case name == p.tg.Capabilities.TurnEndRelease:
			in = json.RawMessage(`{"sequence":1}`)
		default:
			in = json.RawMessage(`{}`)
		}
		ex = p.must(ruleTeardown, c.Call(name, in))
		if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure {
			p.fail(ruleTeardown, ex, "call %q after teardown answered %q, want a failure receipt", name, rc.Type)
		}
	}
	// A refused execute must not have run: no callback used its grant.
	if calls := p.brain.CallsFor(p.session, seq); len(calls) > 0 {
		p.fail(ruleTeardown, nil, "the execute refused after teardown still called back: %v", calls)
	}
}

// afterTeardownCalls names the methods lifecycle/after-teardown calls on
// a torn-down binding: the declared methods and the turn-end method, or,
// when the target declares none, a method no provider has.
func (p *probe) afterTeardownCalls() []string {
	names := make([]string, 0, len(p.tg.Capabilities.Methods)+1)
	for name := range p.tg.Capabilities.Methods {
		names = append(names, name)
	}
	if m := p.tg.Capabilities.TurnEndRelease; m != "" && !slices.Contains(names, m) {
		names = append(names, m)
	}
	if len(names) == 0 {
		return []string{"conformance-probe"}
	}
	sort.Strings(names)
	return names
}

// lifecycleSetupOnce repeats a binding's setup at its own sequence after
// the binding was torn down: the repeat is the setup delivered again, not
// a new one, so the binding stays torn down and an execute on it fails.
func lifecycleSetupOnce(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.binding()
	setup := c.Setup(p.tg.SetupConfiguration)
	p.accepted(ruleLifecycle, "setup", setup)
	p.accepted(ruleTeardown, "teardown", c.Teardown())
	ex := p.send(setup) // the same command, as a retried delivery would repeat it
	if err := valid(ex); err != nil {
		p.fatal(ruleSetupOnce, ex, "the repeated setup: %v", err)
	}
	// Should the repeat have set the binding up again, it is torn down
	// when the case ends.
	p.teardownLater(c)
	again, seq := p.execute(c, d, nil)
	if err := valid(again); err != nil {
		p.fatal(ruleSetupOnce, again, "execute after the repeated setup: %v", err)
	}
	if rc := again.receipt(); rc.Type != envapi.ReceiptFailure {
		p.fail(ruleSetupOnce, ex, "the setup at sequence %d, repeated after its binding was torn down, set the binding up again: an execute on it (sequence %d) then answered %q, want a failure as after teardown", setup.Operation.Sequence, seq, rc.Type)
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
