package conformance

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

func turnEndRelease(p *probe) {
	name := p.tg.Capabilities.TurnEndRelease
	c := p.binding()
	ex := p.accepted(ruleTurnEnd, "setup", c.Setup(p.tg.SetupConfiguration))
	p.teardownLater(c)
	if got := ex.receipt().OnTurnEnd; got != name {
		p.fatal(ruleTurnEnd, ex, "setup registered on_turn_end %q, the target declares %q", got, name)
	}
	for turn := range 2 {
		started := c.Reserve() // the turn_started record
		p.mustTool(c, p.descriptor(RoleEcho), fmt.Sprintf("echo in turn %d", turn+1))
		input, _ := json.Marshal(map[string]uint64{"sequence": started})
		ex := p.must(ruleTurnEnd, c.Call(name, input))
		if rc := ex.receipt(); rc.Type == envapi.ReceiptFailure || rc.Type == envapi.ReceiptUnknown {
			p.fail(ruleTurnEnd, ex, "the turn-end call %q after turn %d answered %q %s", name, turn+1, rc.Type, rc.Code)
		}
	}
}

func methodsDeclared(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	names := make([]string, 0, len(p.tg.Capabilities.Methods))
	for name := range p.tg.Capabilities.Methods {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		input := p.tg.Capabilities.Methods[name]
		if input == nil {
			input = json.RawMessage(`{}`)
		}
		ex := p.send(c.Call(name, input))
		if err := valid(ex); err != nil {
			p.fail(ruleMethods, ex, "call %q: %v", name, err)
			continue
		}
		if rc := ex.receipt(); rc.Type != envapi.ReceiptResult {
			p.fail(ruleMethods, ex, "the declared method %q with its sample input answered %q %s, want result", name, rc.Type, rc.Code)
		}
	}
}

func reporterObservation(p *probe) {
	trig := p.tg.Capabilities.Reporter
	c := p.setup()
	p.teardownLater(c)
	if trig.Call != "" {
		input := trig.Input
		if input == nil {
			input = json.RawMessage(`{}`)
		}
		ex := p.must(ruleReporter, c.Call(trig.Call, input))
		if rc := ex.receipt(); rc.Type == envapi.ReceiptFailure || rc.Type == envapi.ReceiptUnknown {
			p.fatal(ruleReporter, ex, "the reporter trigger %q answered %q %s", trig.Call, rc.Type, rc.Code)
		}
	}
	mine := func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && call.Session == p.session && call.Environment == c.Environment
	}
	ctx, cancel := contextWithTimeout(p, p.o.Grace)
	defer cancel()
	if _, err := p.brain.WaitFor(ctx, mine); err != nil {
		p.fatal(ruleReporter, nil, "no reporter post for binding %s/%s within %v: %v", p.session, c.Environment, p.o.Grace, err)
	}
	for _, call := range p.brain.Filter(mine) {
		if call.Status != 200 {
			p.fail(ruleReporter, nil, "a reporter post was refused by Brain: %s\n  body: %s", call, excerpt(call.Input, 400))
		}
	}
	if trig.Call != "" {
		// Observations the call posts after its answer arrive within the
		// grace; a quarter of it lets the last of them arrive.
		p.sleep(p.o.Grace / 4)
		p.reporterLostAck(trig, len(p.brain.Filter(mine)))
	}
}

// reporterLostAck calls the reporter trigger on a binding of its own
// with the acknowledgement of its first post lost: the observation may
// have been committed, so it is not posted again. A trigger call posts
// want observations when nothing is lost; one more is a retry.
func (p *probe) reporterLostAck(trig *ReporterTrigger, want int) {
	c := p.setup()
	p.teardownLater(c)
	mine := func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && call.Session == p.session && call.Environment == c.Environment
	}
	p.sleep(p.o.Grace / 4) // posts of the setup, if it makes any
	before := len(p.brain.Filter(mine))
	p.brain.Inject(envtest.MethodReporter, envtest.Fault{Kind: envtest.LoseAck, Token: c.Reporter().Token, Times: 1})
	input := trig.Input
	if input == nil {
		input = json.RawMessage(`{}`)
	}
	ex := p.send(c.Call(trig.Call, input))
	if ex.Status == 0 && ex.Err != nil {
		p.fail(ruleReporterOnce, ex, "the reporter trigger %q, its observation's acknowledgement lost: %v", trig.Call, valid(ex))
		return
	}
	p.sleep(p.o.Grace / 2)
	if after := p.brain.Filter(mine); len(after)-before > want {
		p.fail(ruleReporterOnce, ex, "with the acknowledgement of its first observation lost, the reporter trigger %q made binding %s/%s post %d observations, where it posts %d when nothing is lost: a post was sent again: %v",
			trig.Call, c.Session, c.Environment, len(after)-before, want, after[before:])
	}
}

func restartBinding(p *probe) {
	write, read := p.descriptor(RoleWrite), p.readDescriptor()
	c := p.setup()
	p.teardownLater(c)
	p.mustTool(c, write, "write before the restart")
	p.tg.Capabilities.Restart(p.t)
	cmd := c.Execute(read.Implementation, read.Input, nil)
	out, ex, _, err := p.toolCmd(cmd, read)
	switch {
	case err == nil:
		return // the provider kept its resource
	case ex.Resp != nil && ex.receipt().Type == envapi.ReceiptFailure:
		return // loss reported explicitly
	case p.finishedWithError(cmd.Operation.Sequence, ex):
		return // loss reported through the Tool's outcome
	case ex.Resp != nil && slices.Contains([]envapi.ReceiptType{envapi.ReceiptResult, envapi.ReceiptReturned}, ex.receipt().Type) && out != nil:
		p.fail(ruleLoss, ex, "after a restart the binding answered a read that does not see the earlier write (%v): a replacement was allocated silently instead of reporting the loss", err)
	default:
		p.fail(ruleLoss, ex, "after a restart, a read on the binding neither kept its state nor reported the loss: %v", err)
	}
}

// finishedWithError reports whether execution seq, answered in ex,
// finished with an error outcome.
func (p *probe) finishedWithError(seq uint64, ex *exchange) bool {
	if p.brain.Count(envtest.Execution(p.session, seq, envapi.MethodFinish)) == 0 {
		return false
	}
	o, err := p.toolOutcome(p.session, seq, ex)
	return err == nil && o.Status == envapi.StatusError
}
