package conformance

import (
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// cancelCleanupEvidence cancels the stuck role's execute, whose cleanup
// then fails: the answer keeps the first stop cause, the cancel, as its
// code, and the cleanup failure as evidence in details.
func cancelCleanupEvidence(p *probe) {
	d := p.descriptor(RoleStuck)
	c := p.setup()
	p.teardownLater(c)
	seq := c.Reserve()
	cmd := c.At(seq, envapi.Execute(d.Implementation, d.Input, nil, p.toolGrant(c.Session, seq)))
	target := p.startBystander("the execute to cancel", cmd)
	// The stuck work is under way, and its cleanup bound to fail, by the
	// deadline the deadline cases send it: the cancel comes then.
	timer := time.NewTimer(p.o.Deadline)
	var ex *exchange
	select {
	case ex = <-target.answered:
	case <-timer.C:
	case <-p.ctx.Done():
	}
	timer.Stop()
	if ex != nil {
		p.fatal(ruleEvidence, ex, "an execute of the stuck role without a deadline answered %v after it was sent, before any cancel; it must run until it is stopped", ex.Answered.Sub(ex.Sent).Round(time.Millisecond))
	}
	first := time.Now()
	ex = p.cancelUntilAnswered(ruleEvidence, c, target, "the first stop cause, with the cleanup evidence in details")
	if err := valid(ex); err != nil {
		p.fatal(ruleEvidence, ex, "a cancelled execute whose cleanup fails: %v", err)
	}
	rc := ex.receipt()
	if rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeCancelled {
		p.fatal(ruleEvidence, ex, "a cancelled execute whose cleanup fails answered %q %s %v after the first cancel, want failure %s (the first stop cause, not what went wrong after it)", rc.Type, rc.Code, ex.Answered.Sub(first).Round(time.Millisecond), envapi.CodeCancelled)
	}
	p.wantEvidence(ex, rc, "the cancel")
}

// wantEvidence fails the case when rc, the stop failure of an execute
// whose cleanup failed, carries no evidence of that failure in details.
func (p *probe) wantEvidence(ex *exchange, rc envapi.Receipt, cause string) {
	p.t.Helper()
	switch s := strings.TrimSpace(string(rc.Details)); s {
	case "", "null", "{}", "[]", `""`:
		p.fail(ruleEvidence, ex, "the failure %s of an execute stopped by %s whose cleanup failed has no evidence of that failure: details is %s", rc.Code, cause, cmpOr(s, "absent"))
	}
}
