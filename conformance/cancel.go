package conformance

import (
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

func cancelRunning(p *probe) {
	d := p.descriptor(RoleSleep)
	c := p.setup()
	p.teardownLater(c)
	cmd := c.Execute(d.Implementation, d.Input, nil)
	seq := cmd.Operation.Sequence
	answered := make(chan *exchange, 1)
	go func() { answered <- p.send(cmd) }()

	// The cancel may overtake the execute; repeat it with backoff until
	// the execute answers.
	var ex *exchange
	first := time.Now()
	limit := time.NewTimer(p.o.Grace)
	defer limit.Stop()
	wait := 10 * time.Millisecond
	for ex == nil {
		cx := p.send(c.Cancel(seq))
		if err := valid(cx); err != nil {
			p.fail(ruleCancel, cx, "cancel of a running execute: %v", err)
		}
		retry := time.NewTimer(wait)
		select {
		case ex = <-answered:
		case <-retry.C:
		case <-limit.C:
			p.fatal(ruleCancel, nil, "the execute at sequence %d did not answer within %v of the first cancel", seq, p.o.Grace)
		}
		retry.Stop()
		wait = min(wait*2, 500*time.Millisecond)
	}
	if err := valid(ex); err != nil {
		p.fatal(ruleCancel, ex, "cancelled execute: %v", err)
	}
	if rc := ex.receipt(); rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeCancelled {
		p.fatal(ruleCancel, ex, "a cancelled execute answered %q %s %v after the first cancel, want failure %s", rc.Type, rc.Code, ex.Answered.Sub(first).Round(time.Millisecond), envapi.CodeCancelled)
	}
	p.watchLate(ruleCancel, c, seq, d, ex, "after answering cancelled")
}
