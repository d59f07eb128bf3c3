package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// echoes fails the case when Brain refuses ex, the answer to cmd, as an
// invalid receipt (envapi.CheckResponse): it names another sequence,
// quotes a credential or token in an identifier, or answers a setup,
// cancel, detach or teardown with a receipt these do not take.
func (p *probe) echoes(ex *exchange, cmd envapi.Command, what string) {
	p.t.Helper()
	if ex.Resp == nil {
		return
	}
	err := ex.Refused
	var fe *envapi.FieldError
	switch {
	case err == nil:
	case errors.As(err, &fe) && fe.Field == "sequence":
		p.fail(ruleResponse, ex, "%s answered sequence %d, want %d (the command's)", what, ex.Resp.Sequence, cmd.Operation.Sequence)
	case errors.As(err, &fe) && fe.Field == "receipt.type":
		p.fail(ruleResponse, ex, "%s answered %q, want accepted, failure or unknown", what, ex.Resp.Receipt.Type)
	default:
		p.fail(ruleResponse, ex, "%s: Brain records this answer as an invalid receipt: %v", what, err)
	}
}

// answersLifecycle fails the case unless ex, the answer to cmd (a setup,
// cancel, detach or teardown), is a receipt Brain takes for it: accepted,
// failure or unknown.
func (p *probe) answersLifecycle(ex *exchange, cmd envapi.Command, what string) {
	p.t.Helper()
	if rc := ex.receipt(); !envapi.Answers(cmd.Operation.Request.Type, rc.Type) {
		p.fail(ruleResponse, ex, "%s answered %q, want accepted, failure or unknown", what, rc.Type)
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
	p.stopAnswersEcho(c)
	// A cancel names another operation (target_sequence), and a failure
	// is an answer like any other: both echo their own sequence.
	// A provider without the cancel capability may refuse a cancel as a
	// request it does not know (400); one that answers it answers it well.
	cancel := c.Cancel(exec.Operation.Sequence)
	if ex = p.send(cancel); ex.Status != http.StatusBadRequest || p.tg.declared(CapCancel) {
		if err := valid(ex); err != nil {
			p.fatal(ruleResponse, ex, "a cancel of the finished execute: %v", err)
		}
		p.echoes(ex, cancel, "a cancel of the finished execute")
	}
	call := c.Call("conformance-no-such-method", json.RawMessage(`{}`))
	ex = p.must(ruleResponse, call)
	p.echoes(ex, call, "a call of an undeclared method")
	detach := c.Detach()
	ex = p.must(ruleResponse, detach)
	p.echoes(ex, detach, "detach")
	teardown := c.Teardown()
	ex = p.must(ruleResponse, teardown)
	p.echoes(ex, teardown, "teardown")
}

// stopAnswersEcho judges the answers of executes that are stopped, which
// many providers write on a path of their own: an execute of the sleep
// role past its deadline and, with the cancel capability, one cancelled.
// Without a sleep role there is nothing to stop. Whether the execute stops
// at all, and how, is for the deadline and cancel cases to judge; an
// answer that does not come, or does not decode, is not judged here.
func (p *probe) stopAnswersEcho(c *envtest.Commands) {
	p.t.Helper()
	d, ok := p.tg.Executes[RoleSleep]
	if !ok {
		return
	}
	timed := c.Execute(d.Implementation, d.Input, envtest.Millis(p.o.Deadline.Milliseconds()))
	p.brain.Expire(timed.Operation.Request.Callback.Token, time.Now().Add(p.o.Deadline))
	ctx, cancel := context.WithTimeout(p.ctx, p.o.Deadline+p.o.Grace)
	ex := p.sendRaw(ctx, p.tg.Token, timed)
	cancel()
	p.echoes(ex, timed, "an execute past its deadline_ms")
	if !p.tg.declared(CapCancel) {
		return
	}
	seq := c.Reserve()
	target := p.startBystander("the execute to cancel", c.At(seq, envapi.Execute(d.Implementation, d.Input, nil, p.toolGrant(c.Session, seq))))
	// An echo's round trip gives the execute the time to start.
	if echo, ok := p.tg.Executes[RoleEcho]; ok {
		_, _, _, _ = p.tool(c, echo)
	}
	stop := c.Cancel(seq)
	p.echoes(p.send(stop), stop, "a cancel of a running execute")
	timer := time.NewTimer(p.o.Grace)
	defer timer.Stop()
	select {
	case ex = <-target.answered:
		p.echoes(ex, target.cmd, "a cancelled execute")
	case <-timer.C:
	case <-p.ctx.Done():
	}
}
