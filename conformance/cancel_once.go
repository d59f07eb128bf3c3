package conformance

import (
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// cancelAtMostOnce repeats a cancel at its own sequence, as a delivery
// retried after its answer was lost would: the provider's cancel is not
// run again. The first cancel names an echo that has finished, while
// nothing runs on the binding; the repeat comes while a sleep runs on it.
// A cancel that reaches past the execute it names (a sandbox stopped,
// every process of the binding killed) stops nothing the first time, and
// stops the sleep when it runs again.
func cancelAtMostOnce(p *probe) {
	d := p.descriptor(RoleSleep)
	echo := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)

	done := c.Execute(echo.Implementation, echo.Input, nil)
	if _, ex, r, err := p.toolCmd(done, echo); err != nil {
		p.fatal(r, ex, "echo: %v", err)
	}
	cancel := c.Cancel(done.Operation.Sequence)
	first := p.send(cancel)
	if err := valid(first); err != nil {
		p.fatal(ruleCancelOnce, first, "cancel of a finished execute: %v", err)
	}
	p.answersLifecycle(first, cancel, "a cancel of a finished execute")

	// A sleep runs on the binding when the cancel is repeated: an echo
	// after its request is written gives it the time to start.
	running := p.startBystander("an execute of the binding that ran while the cancel was repeated", c.Execute(d.Implementation, d.Input, nil))
	p.mustTool(c, echo, "an echo while a sleep runs")
	again := p.send(cancel)
	if err := valid(again); err != nil {
		p.fatal(ruleCancelOnce, again, "the cancel repeated at sequence %d: %v", cancel.Operation.Sequence, err)
	}
	p.answersLifecycle(again, cancel, "the repeated cancel")
	rf, ra := first.receipt(), again.receipt()
	if ra.Type != envapi.ReceiptUnknown && (ra.Type != rf.Type || ra.Code != rf.Code) {
		p.fail(ruleCancelOnce, again, "the cancel repeated at sequence %d answered %q %s, its first answer %q %s: want unknown or the first answer",
			cancel.Operation.Sequence, ra.Type, ra.Code, rf.Type, rf.Code)
	}
	p.notStoppedByRepeat(c, cancel, again, running)
}

// notStoppedByRepeat fails the case when b, an execute of c started
// before the repeat of cancel answered in again, was stopped: it answered
// failure cancelled, or, having answered returned, finished cancelled. A
// stop the repeat makes comes with it; b is watched for half the grace
// after the repeat's answer, and then cancelled (best effort: the case
// ending stops it too), its work done with.
func (p *probe) notStoppedByRepeat(c *envtest.Commands, cancel envapi.Command, again *exchange, b *bystander) {
	p.t.Helper()
	until := again.Answered.Add(p.o.Grace / 2)
	var bx *exchange
	timer := time.NewTimer(time.Until(until))
	select {
	case bx = <-b.answered:
	case <-timer.C:
	case <-p.ctx.Done():
	}
	timer.Stop()
	if bx == nil {
		// Still running: nothing stopped it.
		p.send(c.Cancel(b.cmd.Operation.Sequence))
		return
	}
	op, seq := cancel.Operation, cancel.Operation.Sequence
	rc := bx.receipt()
	if rc.Type == envapi.ReceiptFailure && rc.Code == envapi.CodeCancelled {
		p.fail(ruleCancelOnce, bx, "the cancel of sequence %d, repeated at its own sequence %d (session %s, environment %s), ran again: it stopped %s (sequence %d), which answered failure %s",
			op.Request.TargetSequence, seq, op.SessionID, op.Environment, b.what, b.cmd.Operation.Sequence, rc.Code)
		return
	}
	if rc.Type != envapi.ReceiptReturned {
		return
	}
	// Its work goes on after the answer: a second run of the cancel
	// closes it cancelled.
	call, err := p.waitCall(p.session, b.cmd.Operation.Sequence, envapi.MethodFinish, time.Until(until))
	if err != nil {
		// Still going: nothing stopped it.
		p.send(c.Cancel(b.cmd.Operation.Sequence))
		return
	}
	if isNull(call.Input) {
		return
	}
	if o, err := envapi.DecodeOutcome(call.Input); err == nil && (o.Status == envapi.StatusCancelled || o.Error != nil && o.Error.Code == envapi.CodeCancelled) {
		p.fail(ruleCancelOnce, bx, "the cancel of sequence %d, repeated at its own sequence %d (session %s, environment %s), ran again: it stopped %s (sequence %d), which answered returned and then finished %s",
			op.Request.TargetSequence, seq, op.SessionID, op.Environment, b.what, b.cmd.Operation.Sequence, excerpt(call.Input, 200))
	}
}
