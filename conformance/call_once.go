package conformance

import (
	"sort"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// methodsAtMostOnce repeats a call of every declared method at its own
// sequence, as a delivery retried after its answer was lost would: the
// repeat is not run again. The suite cannot see what a method does, so it
// judges the answer (unknown, or the first answer as it was; a result
// other than the first is a second run) and, when the reporter trigger is
// a call, the trigger's observations: a second run posts again.
func methodsAtMostOnce(p *probe) {
	c := p.setup()
	p.teardownLater(c)
	names := make([]string, 0, len(p.tg.Capabilities.Methods))
	for name := range p.tg.Capabilities.Methods {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cmd := c.Call(name, p.tg.Capabilities.Methods[name])
		first := p.send(cmd)
		if err := valid(first); err != nil {
			p.fail(ruleCallOnce, first, "call %q: %v", name, err)
			continue
		}
		p.repeatCall(name, cmd, first)
	}
	if trig := p.tg.Capabilities.Reporter; trig != nil && trig.Call != "" {
		p.repeatTrigger(trig)
	}
}

// repeatCall sends cmd, a call of method name first answered in first,
// again and fails the case when the answer shows it ran again; it answers
// the repeat's exchange.
func (p *probe) repeatCall(name string, cmd envapi.Command, first *exchange) *exchange {
	p.t.Helper()
	again := p.send(cmd)
	if err := valid(again); err != nil {
		p.fail(ruleCallOnce, again, "the call %q repeated at sequence %d: %v", name, cmd.Operation.Sequence, err)
		return again
	}
	rf, ra := first.receipt(), again.receipt()
	switch ra.Type {
	case envapi.ReceiptAccepted, envapi.ReceiptProgress, envapi.ReceiptReturned:
		p.fail(ruleCallOnce, again, "the call %q repeated at sequence %d answered %q, as if it had been dispatched again; want unknown or the first answer", name, cmd.Operation.Sequence, ra.Type)
	case envapi.ReceiptResult:
		if rf.Type == envapi.ReceiptResult && jsonMatch(ra.Output, rf.Output, false) == nil {
			return again // the first answer, kept
		}
		p.fail(ruleCallOnce, again, "the call %q repeated at sequence %d answered a result other than its first answer (%s %s, then %s): it ran again; want unknown or the first answer",
			name, cmd.Operation.Sequence, rf.Type, excerpt(rf.Output, 200), excerpt(ra.Output, 200))
	}
	return again
}

// repeatTrigger calls the reporter trigger on a binding of its own, lets
// its observations arrive, repeats the call and watches for more: a
// repeat that posts again ran again.
func (p *probe) repeatTrigger(trig *ReporterTrigger) {
	c := p.setup()
	p.teardownLater(c)
	mine := func(call envtest.Call) bool {
		return call.Kind == envtest.KindReporter && call.Session == p.session && call.Environment == c.Environment
	}
	cmd := c.Call(trig.Call, trig.Input)
	first := p.send(cmd)
	if err := valid(first); err != nil {
		p.fatal(ruleCallOnce, first, "the reporter trigger %q: %v", trig.Call, err)
	}
	ctx, cancel := contextWithTimeout(p, p.o.Grace)
	_, err := p.brain.WaitFor(ctx, mine)
	cancel()
	if err != nil {
		// The reporter case judges a trigger that posts nothing; without
		// a post there is no run to count here.
		p.repeatCall(trig.Call, cmd, first)
		return
	}
	// Observations the first run posts after its answer arrive within
	// the grace; a quarter of it lets the last of them arrive.
	p.sleep(p.o.Grace / 4)
	before := p.brain.Filter(mine)
	again := p.repeatCall(trig.Call, cmd, first)
	p.sleep(p.o.Grace / 2)
	if after := p.brain.Filter(mine); len(after) > len(before) {
		p.fail(ruleCallOnce, again, "the reporter trigger %q, repeated at sequence %d, ran again: binding %s/%s posted %d more observations after the repeat (%d before it): %v",
			trig.Call, cmd.Operation.Sequence, c.Session, c.Environment, len(after)-len(before), len(before), after[len(before):])
	}
}

// sleep waits d, or until the case's context ends.
func (p *probe) sleep(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-p.ctx.Done():
	}
}
