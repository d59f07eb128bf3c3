package conformance

import (
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// echoes fails the case when ex does not answer cmd's sequence.
func (p *probe) echoes(ex *exchange, cmd envapi.Command, what string) {
	p.t.Helper()
	if ex.Resp == nil {
		return
	}
	if ex.Resp.Sequence != cmd.Operation.Sequence {
		p.fail(ruleResponse, ex, "%s answered sequence %d, want %d (the command's)", what, ex.Resp.Sequence, cmd.Operation.Sequence)
	}
	if ex.Resp.Contract != envapi.Contract {
		p.fail(ruleResponse, ex, "%s answered contract %q, want %q", what, ex.Resp.Contract, envapi.Contract)
	}
}

func contractEcho(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.binding()
	setup := c.Setup(p.tg.SetupConfiguration)
	ex := p.must(ruleResponse, setup)
	p.echoes(ex, setup, "setup")
	p.teardownLater(c)
	// Skip ahead so that the execute's sequence is not a small number a
	// provider could answer by accident.
	for range 40 {
		c.Reserve()
	}
	exec := c.Execute(d.Implementation, d.Input, nil)
	_, ex, r, err := p.toolCmd(exec, d)
	if err != nil {
		p.fail(r, ex, "echo: %v", err)
	}
	p.echoes(ex, exec, "execute")
	detach := c.Detach()
	ex = p.must(ruleResponse, detach)
	p.echoes(ex, detach, "detach")
	teardown := c.Teardown()
	ex = p.must(ruleResponse, teardown)
	p.echoes(ex, teardown, "teardown")
}
