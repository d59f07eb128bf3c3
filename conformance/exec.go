package conformance

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

func execFinish(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)
	p.mustTool(c, d, "echo")
}

// quiesce runs one more echo on c and tears it down, so that everything
// the provider does for earlier executes has had its chance to arrive.
func (p *probe) quiesce(c *envtest.Commands, d Descriptor) {
	p.t.Helper()
	p.mustTool(c, d, "a later echo on the same binding")
	p.accepted(ruleLifecycle, "teardown", c.Teardown())
}

// finishes counts the finish calls of execution seq, refused ones included.
func (p *probe) finishes(seq uint64) []envtest.Call {
	return p.brain.Filter(envtest.Execution(p.session, seq, envapi.MethodFinish))
}

func execFinishOnce(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	var seqs []uint64
	for range 2 {
		cmd := c.Execute(d.Implementation, d.Input, nil)
		if _, ex, r, err := p.toolCmd(cmd, d); err != nil {
			p.fatal(r, ex, "echo: %v", err)
		}
		seqs = append(seqs, cmd.Operation.Sequence)
	}
	p.quiesce(c, d)
	for _, seq := range seqs {
		fins := p.finishes(seq)
		if len(fins) != 1 {
			p.fail(ruleFinishOnce, nil, "execution %d called finish %d times, want exactly once: %v", seq, len(fins), fins)
			continue
		}
		for _, call := range p.brain.CallsFor(p.session, seq) {
			if call.Time.After(fins[0].Time) {
				p.fail(ruleFinishOnce, nil, "execution %d called %s after finish: %v", seq, call.Method, call)
			}
		}
	}
}

// lostAckHold is how long the lost acknowledgement of exec/lost-finish-ack
// keeps the finish call open before its connection is closed. A provider
// that waits for finish before answering answers at least this long after
// finish arrived; one that answered first had its answer arriving before
// finish did. The hold keeps the two apart however the goroutines that
// note the times are scheduled.
const lostAckHold = 250 * time.Millisecond

func execLostFinishAck(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	cmd := c.Execute(d.Implementation, d.Input, nil)
	seq := cmd.Operation.Sequence
	p.brain.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.LoseAck, Token: cmd.Operation.Request.Callback.Token, Times: 1, Delay: lostAckHold})
	ex := p.send(cmd)
	if err := valid(ex); err != nil {
		p.fatal(ruleResponse, ex, "execute: %v", err)
	}
	fin, err := p.waitCall(p.session, seq, envapi.MethodFinish, p.finishWait())
	if err != nil {
		p.fatal(ruleFinish, ex, "no finish call within %v of the receipt: %v%s", p.finishWait(), err, p.silentHint(p.session, seq))
	}
	rc := ex.receipt()
	if ex.FirstByte.Sub(fin.Time) >= lostAckHold && rc.Type != envapi.ReceiptUnknown {
		p.fail(ruleLostAck, ex, "finish was called before the answer and its acknowledgement was lost (the answer came %v after finish, once its connection was closed), so no reliable result exists; the execute answered %q, want unknown", ex.FirstByte.Sub(fin.Time).Round(time.Millisecond), rc.Type)
	}
	// A finish Brain answered with a server error is not sent again
	// either: Brain may have committed it before failing to answer.
	refused := c.Execute(d.Implementation, d.Input, nil)
	p.brain.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.ServerError, Token: refused.Operation.Request.Callback.Token, Times: 1})
	rx := p.send(refused)
	if err := valid(rx); err != nil {
		p.fatal(ruleResponse, rx, "execute: %v", err)
	}
	if _, err := p.waitCall(p.session, refused.Operation.Sequence, envapi.MethodFinish, p.finishWait()); err != nil {
		p.fatal(ruleFinish, rx, "no finish call within %v of the receipt: %v%s", p.finishWait(), err, p.silentHint(p.session, refused.Operation.Sequence))
	}
	p.quiesce(c, d)
	if fins := p.finishes(seq); len(fins) != 1 {
		p.fail(ruleLostAck, ex, "finish was sent %d times after its acknowledgement was lost, want once (never retried): %v", len(fins), fins)
	}
	if fins := p.finishes(refused.Operation.Sequence); len(fins) != 1 {
		p.fail(ruleLostAck, rx, "finish was sent %d times after Brain answered it %d, want once (never retried): %v", len(fins), http.StatusServiceUnavailable, fins)
	}
}

func execUngranted(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)
	granted := []string{envapi.MethodResult, envapi.MethodReturned, envapi.MethodFinish}
	cmd := c.ExecuteWith(d.Implementation, d.Input, nil, func(seq uint64) *envapi.Grant {
		g := p.brain.ExecutionGrant(p.session, seq, granted...)
		return &g
	})
	// The execution may refuse to run without a service it needs (a
	// failure receipt); whatever it does, it calls only what is granted.
	if _, ex, r, err := p.toolCmd(cmd, d); err != nil && ex.receipt().Type != envapi.ReceiptFailure {
		p.fatal(r, ex, "echo with a grant of %v only: %v", granted, err)
	}
	for _, call := range p.brain.CallsFor(p.session, cmd.Operation.Sequence) {
		if !slices.Contains(granted, call.Method) {
			p.fail(ruleGranted, nil, "the execution used %q, which its grant (%v) does not list: %v", call.Method, granted, call)
		}
	}
}

func execAtMostOnce(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	cmd := c.Execute(d.Implementation, d.Input, nil)
	seq := cmd.Operation.Sequence
	if _, ex, r, err := p.toolCmd(cmd, d); err != nil {
		p.fatal(r, ex, "echo: %v", err)
	}
	before := len(p.brain.CallsFor(p.session, seq))
	ex := p.send(cmd) // the same command, as a retried delivery would repeat it
	if err := valid(ex); err != nil {
		p.fatal(ruleOnce, ex, "the repeated execute: %v", err)
	}
	p.otherSessionRuns(c, d, seq)
	p.quiesce(c, d)
	if calls := p.brain.CallsFor(p.session, seq); len(calls) > before {
		p.fail(ruleOnce, ex, "the execute at sequence %d was run again when repeated: it called back %d more times: %v", seq, len(calls)-before, calls[before:])
	}
	if rc := ex.receipt(); rc.Type == envapi.ReceiptAccepted || rc.Type == envapi.ReceiptProgress {
		p.fail(ruleOnce, ex, "the repeated execute answered %q, as if it had been dispatched again; want unknown or the first answer", rc.Type)
	}
}

// otherSessionRuns runs d at sequence seq on a binding of another session
// with c's environment name, while c is still set up, and fails the case
// unless it runs: it is another command, not a repeat of c's.
func (p *probe) otherSessionRuns(c *envtest.Commands, d Descriptor, seq uint64) {
	p.t.Helper()
	tw := p.twin(c)
	p.accepted(ruleIsolation, fmt.Sprintf("setup of binding %s/%s, of another session with the same environment name", tw.Session, tw.Environment), tw.Setup(p.tg.SetupConfiguration))
	p.teardownLater(tw)
	for tw.Last() < seq-1 {
		tw.Reserve()
	}
	cmd := tw.Execute(d.Implementation, d.Input, nil)
	if got := cmd.Operation.Sequence; got != seq {
		p.fatal(ruleOnce, nil, "internal: the other session's execute has sequence %d, want %d", got, seq)
	}
	if _, ex, _, err := p.toolCmd(cmd, d); err != nil {
		p.fail(ruleOnce, ex, "an execute of session %s at sequence %d, the sequence an execute of session %s had, did not run: %v", tw.Session, seq, c.Session, err)
	}
}

// completing reports whether call completes or records a Tool outcome.
func completing(call envtest.Call) bool {
	switch call.Method {
	case envapi.MethodFinish, envapi.MethodResult, envapi.MethodReturned:
		return true
	}
	return false
}

func execProgressReceipt(p *probe) {
	d := p.descriptor(RoleProgress)
	c := p.setup()
	p.teardownLater(c)
	ex, seq := p.execute(c, d, nil)
	if err := valid(ex); err != nil {
		p.fatal(ruleReceipts, ex, "execute of the progress descriptor: %v", err)
	}
	switch rc := ex.receipt(); rc.Type {
	case envapi.ReceiptAccepted:
	case envapi.ReceiptProgress:
		if len(rc.Data) == 0 {
			p.fail(ruleReceipts, ex, "a progress receipt without data")
		}
	default:
		p.fatal(ruleReceipts, ex, "the progress descriptor answered %q, want accepted or progress", rc.Type)
	}
	after := func(call envtest.Call) bool {
		return call.Kind == envtest.KindExecution && call.Session == p.session && call.Sequence == seq && completing(call)
	}
	watch := max(d.Runs, p.o.Grace/2)
	ctx, cancel := context.WithTimeout(p.ctx, watch)
	defer cancel()
	if call, err := p.brain.WaitFor(ctx, after); err == nil {
		p.fail(ruleReceipts, ex, "the provider answered %q but also completed the Tool (%v after the answer): %v", ex.receipt().Type, call.Time.Sub(ex.Answered).Round(time.Millisecond), call)
	}
}
