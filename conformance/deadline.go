package conformance

import (
	"context"
	"strings"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// completedOK reports whether call delivered an ok outcome (a result or a
// finish with status ok).
func completedOK(call envtest.Call) bool {
	if call.Method != envapi.MethodFinish && call.Method != envapi.MethodResult && call.Method != envapi.MethodReturned {
		return false
	}
	if strings.TrimSpace(string(call.Input)) == "null" {
		return false
	}
	o, err := envapi.DecodeOutcome(call.Input)
	return err == nil && o.Status == envapi.StatusOK
}

// watchLate fails the case when execution seq delivers an ok outcome after
// the stop answer in ex: at once, after the binding is torn down, and until
// the descriptor's natural run time has passed. With keep the binding is
// torn down only once that time has passed, so that the work of a Tool
// that answered returned must stop for the stop itself, not for the
// teardown.
func (p *probe) watchLate(r rule, c *envtest.Commands, seq uint64, d Descriptor, ex *exchange, why string, keep bool) {
	p.t.Helper()
	if !keep {
		p.accepted(ruleLifecycle, "teardown", c.Teardown())
	}
	late := func(call envtest.Call) bool {
		return call.Kind == envtest.KindExecution && call.Session == p.session && call.Sequence == seq && completedOK(call)
	}
	if keep {
		defer func() { p.accepted(ruleLifecycle, "teardown", c.Teardown()) }()
	}
	if d.Runs > 0 {
		until := ex.Sent.Add(d.Runs + p.o.Grace/2)
		ctx, cancel := context.WithDeadline(p.ctx, until)
		defer cancel()
		if call, err := p.brain.WaitFor(ctx, late); err == nil {
			p.fail(r, ex, "%s, the work went on and completed ok %v later: %v", why, call.Time.Sub(ex.Answered).Round(time.Millisecond), call)
			return
		}
	}
	for _, call := range p.brain.Filter(late) {
		p.fail(r, ex, "%s, the execution still delivered an ok outcome: %v", why, call)
	}
}

// executePastDeadline runs the role's implementation with the profile's
// deadline and checks that it answers a timeout failure within the
// deadline and its grace, or, when returned is allowed, returned (the
// Tool goes on, and Brain closes it at the deadline); what names the
// execute in failures.
func executePastDeadline(p *probe, role, what string, returned bool) (d Descriptor, c *envtest.Commands, cmd envapi.Command, ex *exchange, rc envapi.Receipt) {
	d = p.descriptor(role)
	c = p.setup()
	p.teardownLater(c)
	ms := p.o.Deadline.Milliseconds()
	cmd = c.Execute(d.Implementation, d.Input, envtest.Millis(ms))
	p.brain.Expire(cmd.Operation.Request.Callback.Token, time.Now().Add(p.o.Deadline))
	bound := p.o.Deadline + p.o.Grace
	ctx, cancel := context.WithTimeout(p.ctx, bound)
	defer cancel()
	ex = p.sendRaw(ctx, p.tg.Token, cmd)
	if err := valid(ex); err != nil {
		p.fatal(ruleTimeout, ex, "%s, with deadline_ms %d (answer expected within %v): %v", what, ms, bound, err)
	}
	rc = ex.receipt()
	if returned && rc.Type == envapi.ReceiptReturned {
		return d, c, cmd, ex, rc
	}
	if rc.Type != envapi.ReceiptFailure || rc.Code != envapi.CodeTimeout {
		p.fatal(ruleTimeout, ex, "%s, past its deadline_ms %d, answered %q %s after %v, want failure %s (the first stop cause)", what, ms, rc.Type, rc.Code, ex.Answered.Sub(ex.Sent).Round(time.Millisecond), envapi.CodeTimeout)
	}
	// The provider received the command after it was sent, so its
	// deadline cannot have passed before Sent + deadline_ms, less the
	// granularity of a timer (a JavaScript timer may fire a few
	// milliseconds early).
	if elapsed := ex.Answered.Sub(ex.Sent); elapsed < p.o.Deadline-timerSlack {
		p.fail(ruleRemaining, ex, "%s answered timeout after %v, before its deadline_ms %d had passed", what, elapsed.Round(time.Millisecond), ms)
	}
	return d, c, cmd, ex, rc
}

// timerSlack is how much earlier than its deadline_ms a provider may
// answer timeout: the granularity of its timers, not a misreading of the
// deadline.
const timerSlack = 10 * time.Millisecond

// longDeadlineMs is a deadline_ms longer than a timer counting
// milliseconds in a signed 32-bit integer holds (2,147,483,647 ms, about
// 24.8 days): a JavaScript setTimeout given it fires after 1 ms instead.
const longDeadlineMs = 3_000_000_000

// withinDeadline runs the echo with a deadline_ms far longer than it
// needs (the case's own time bound), then with one longer than a 32-bit
// millisecond timer holds, and fails the case unless both complete.
func withinDeadline(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)
	for _, ms := range []int64{p.o.Timeout.Milliseconds(), longDeadlineMs} {
		if _, ex, _, err := p.toolCmd(c.Execute(d.Implementation, d.Input, envtest.Millis(ms)), d); err != nil {
			p.fatal(ruleRemaining, ex, "an echo with deadline_ms %d, far more than it needs: %v", ms, err)
		}
	}
}

func deadlineTimeout(p *probe) {
	withinDeadline(p)
	d, c, cmd, ex, rc := executePastDeadline(p, RoleSleep, "an execute", true)
	if rc.Type == envapi.ReceiptReturned {
		p.watchLate(ruleTimeout, c, cmd.Operation.Sequence, d, ex, "after its deadline passed (it had answered returned)", true)
		return
	}
	p.watchLate(ruleTimeout, c, cmd.Operation.Sequence, d, ex, "after answering timeout", false)
}

func deadlineCleanupEvidence(p *probe) {
	_, _, _, ex, rc := executePastDeadline(p, RoleStuck, "an execute whose cleanup fails", false)
	p.wantEvidence(ex, rc, "its deadline")
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
