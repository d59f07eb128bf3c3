package conformance

import (
	"slices"

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

func execLostFinishAck(p *probe) {
	d := p.descriptor(RoleEcho)
	c := p.setup()
	cmd := c.Execute(d.Implementation, d.Input, nil)
	seq := cmd.Operation.Sequence
	p.brain.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.LoseAck, Token: cmd.Operation.Request.Callback.Token, Times: 1})
	ex := p.send(cmd)
	if err := valid(ex); err != nil {
		p.fatal(ruleResponse, ex, "execute: %v", err)
	}
	fin, err := p.waitCall(seq, envapi.MethodFinish, p.finishWait())
	if err != nil {
		p.fatal(ruleFinish, ex, "no finish call within %v of the receipt: %v", p.finishWait(), err)
	}
	rc := ex.receipt()
	if fin.Time.Before(ex.Answered) && rc.Type != envapi.ReceiptUnknown {
		p.fail(ruleLostAck, ex, "finish was called before the answer and its acknowledgement was lost, so no reliable result exists; the execute answered %q, want unknown", rc.Type)
	}
	p.quiesce(c, d)
	if fins := p.finishes(seq); len(fins) != 1 {
		p.fail(ruleLostAck, ex, "finish was sent %d times after its acknowledgement was lost, want once (never retried): %v", len(fins), fins)
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
	if _, ex, r, err := p.toolCmd(cmd, d); err != nil {
		p.fatal(r, ex, "echo with a grant of %v only: %v", granted, err)
	}
	for _, call := range p.brain.CallsFor(p.session, cmd.Operation.Sequence) {
		if !slices.Contains(granted, call.Method) {
			p.fail(ruleGranted, nil, "the execution used %q, which its grant (%v) does not list: %v", call.Method, granted, call)
		}
	}
}
