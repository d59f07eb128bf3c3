package conformance

import (
	"context"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// execAtMostOnceRunning repeats an execute of the sleep role while its
// work still runs, as a delivery retried before its answer came would: the
// repeat is not run again, however the provider answers it meanwhile.
func execAtMostOnceRunning(p *probe) {
	d := p.descriptor(RoleSleep)
	if d.Runs <= 0 {
		p.t.Skipf("the sleep role runs until it is stopped (no Descriptor.Runs, profile \"runs_ms\"): a second run of it could not be told from the first")
	}
	echo := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)
	cmd := c.Execute(d.Implementation, d.Input, nil)
	seq := cmd.Operation.Sequence
	first := p.startBystander("the execute", cmd)
	// An echo's round trip gives the execute the time to start.
	p.mustTool(c, echo, "an echo while a sleep runs")

	// A provider may hold the repeat until the first answer and give it
	// that; it has at most the sleep's run and the grace to answer.
	ctx, cancel := context.WithTimeout(p.ctx, d.Runs+p.o.Grace)
	defer cancel()
	rx := p.sendRaw(ctx, p.tg.Token, cmd)
	if err := valid(rx); err != nil {
		p.fatal(ruleOnce, rx, "the execute repeated while it ran: %v", err)
	}
	if rc := rx.receipt(); rc.Type == envapi.ReceiptAccepted || rc.Type == envapi.ReceiptProgress {
		p.fail(ruleOnce, rx, "the execute repeated while it ran answered %q, as if it had been dispatched again; want unknown or the first answer", rc.Type)
	}
	timer := time.NewTimer(time.Until(first.sent.Add(d.Runs + p.o.Grace)))
	select {
	case <-first.answered:
	case <-timer.C:
	case <-p.ctx.Done():
	}
	timer.Stop()
	// A second run of the repeat finishes its Tool the sleep's run after
	// the repeat was sent.
	wait := time.NewTimer(time.Until(rx.Sent.Add(d.Runs + p.o.Grace/2)))
	select {
	case <-wait.C:
	case <-p.ctx.Done():
	}
	wait.Stop()
	if fins := p.finishes(seq); len(fins) > 1 {
		p.fail(ruleOnce, rx, "the execute at sequence %d, repeated while it ran, was run again: its Tool finished %d times: %v", seq, len(fins), fins)
	}
}
