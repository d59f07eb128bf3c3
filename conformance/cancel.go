package conformance

import (
	"fmt"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// bystander is an execute running while another is cancelled.
type bystander struct {
	what     string
	cmd      envapi.Command
	sent     time.Time
	answered chan *exchange
}

// startBystander sends cmd and returns once the request is written; its
// answer arrives on answered.
func (p *probe) startBystander(what string, cmd envapi.Command) *bystander {
	b := &bystander{what: what, cmd: cmd, sent: time.Now(), answered: make(chan *exchange, 1)}
	wrote, done := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ctx := httptrace.WithClientTrace(p.ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) },
	})
	go func() {
		defer close(done)
		b.answered <- p.sendRaw(ctx, p.tg.Token, cmd)
	}()
	select {
	case <-wrote:
	case <-done:
	}
	return b
}

func cancelRunning(p *probe) {
	d := p.descriptor(RoleSleep)
	echo := p.descriptor(RoleEcho)
	c := p.setup()
	p.teardownLater(c)
	tw := p.twin(c)
	p.accepted(ruleIsolation, fmt.Sprintf("setup of binding %s/%s, of another session with the same environment name", tw.Session, tw.Environment), tw.Setup(p.tg.SetupConfiguration))
	p.teardownLater(tw)

	// Two executes run while the target is cancelled: one on the same
	// binding, and one of another session at the target's sequence on a
	// binding of the same name. An echo after each, once its request is
	// written, gives it the time to start.
	same := p.startBystander("an execute on the same binding", c.Execute(d.Implementation, d.Input, nil))
	p.mustTool(c, echo, "an echo while a sleep runs")
	seq := c.Reserve()
	for tw.Last() < seq-1 {
		tw.Reserve()
	}
	other := p.startBystander("an execute of another session at the same sequence", tw.Execute(d.Implementation, d.Input, nil))
	p.mustTool(tw, echo, "an echo on the other session's binding while a sleep runs")

	// The target gets a head start of up to three echoes, each a round
	// trip through the provider: its execute is under way, or has
	// answered returned (its work going on in the background), when the
	// first cancel comes.
	grant := p.toolGrant(c.Session, seq)
	target := p.startBystander("the execute to cancel", c.At(seq, envapi.Execute(d.Implementation, d.Input, nil, grant)))
	answered := target.answered
	var ex *exchange
	for i := 0; i < 3 && ex == nil; i++ {
		p.mustTool(c, echo, "an echo while the execute to cancel runs")
		select {
		case ex = <-answered:
		default:
		}
	}

	first := time.Now()
	if ex == nil {
		ex = p.cancelUntilAnswered(ruleCancel, c, target, "or returned, its work going on until cancelled")
	}
	if err := valid(ex); err != nil {
		p.fatal(ruleCancel, ex, "cancelled execute: %v", err)
	}
	why, keep := "after answering cancelled", false
	switch rc := ex.receipt(); {
	case rc.Type == envapi.ReceiptFailure && rc.Code == envapi.CodeCancelled:
	case rc.Type == envapi.ReceiptReturned:
		// The Tool goes on after its answer: Brain closes it as
		// cancelled, revokes its grant and cancels it, as it does any
		// open Tool, and that cancel must stop the work too.
		p.brain.Revoke(grant.Token)
		cancel := c.Cancel(seq)
		cx := p.send(cancel)
		if err := valid(cx); err != nil {
			p.fatal(ruleCancel, cx, "cancel of a Tool that answered returned: %v", err)
		}
		p.answersLifecycle(cx, cancel, "a cancel of a Tool that answered returned")
		why, keep = "after the cancel of the Tool that answered returned was answered", true
	case ex.Answered.Before(first):
		p.fatal(ruleCancel, ex, "the execute to cancel answered %q %s before any cancel, want returned (its work going on until cancelled) or to run until cancelled", rc.Type, rc.Code)
	default:
		p.fatal(ruleCancel, ex, "a cancelled execute answered %q %s %v after the first cancel, want failure %s (or returned, its work going on until cancelled)", rc.Type, rc.Code, ex.Answered.Sub(first).Round(time.Millisecond), envapi.CodeCancelled)
	}
	p.notCancelled(d, target.cmd.Operation, ex, same, other)
	p.watchLate(ruleCancel, c, seq, d, ex, why, keep)
}

// cancelUntilAnswered cancels target, an execute of c that has not
// answered yet, and returns its answer. The cancel may still overtake the
// execute, so it is repeated with backoff until the execute answers; the
// case fails when it does not answer within the grace of the first cancel.
// also names what the execute may answer besides failure cancelled.
func (p *probe) cancelUntilAnswered(r rule, c *envtest.Commands, target *bystander, also string) *exchange {
	p.t.Helper()
	seq := target.cmd.Operation.Sequence
	limit := time.NewTimer(p.o.Grace)
	defer limit.Stop()
	wait := 10 * time.Millisecond
	sent := 0
	for {
		cancel := c.Cancel(seq)
		cx := p.send(cancel)
		sent++
		if err := valid(cx); err != nil {
			p.fail(r, cx, "cancel of a running execute: %v", err)
		} else {
			p.answersLifecycle(cx, cancel, "a cancel of a running execute")
		}
		retry := time.NewTimer(wait)
		select {
		case ex := <-target.answered:
			retry.Stop()
			return ex
		case <-retry.C:
		case <-limit.C:
			retry.Stop()
			want := "failure " + envapi.CodeCancelled
			if also != "" {
				want += " (" + also + ")"
			}
			p.fatal(r, cx, "the execute at sequence %d did not answer within %v of the first cancel (%d cancels sent; the last one and its answer are below), want %s\n  the execute: POST /v1/operations %s",
				seq, p.o.Grace, sent, want, excerpt(mustMarshal(target.cmd), 400))
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// toolGrant is a tool grant for execution seq of session.
func (p *probe) toolGrant(session string, seq uint64) *envapi.Grant {
	g := p.brain.ToolGrant(session, seq)
	return &g
}

// notCancelled fails the case when a bystander answers cancelled: the
// cancels of target, the execute that answered in ex, stopped another
// execute. The failure names target by its command, not by the answer in
// ex, which may name another sequence (an answer Brain refuses). It
// watches each bystander until it has had the time to run to its end (the
// descriptor's Runs and the grace), or, when the descriptor runs until
// stopped, for half the grace after ex.
func (p *probe) notCancelled(d Descriptor, target envapi.Operation, ex *exchange, bystanders ...*bystander) {
	p.t.Helper()
	for _, b := range bystanders {
		until := ex.Answered.Add(p.o.Grace / 2)
		if d.Runs > 0 {
			until = b.sent.Add(d.Runs + p.o.Grace)
		}
		var bx *exchange
		timer := time.NewTimer(time.Until(until))
		select {
		case bx = <-b.answered:
		case <-timer.C:
		case <-p.ctx.Done():
		}
		timer.Stop()
		if bx == nil {
			continue // still running, or answering late: not this rule's concern
		}
		op := b.cmd.Operation
		if rc := bx.receipt(); rc.Type == envapi.ReceiptFailure && rc.Code == envapi.CodeCancelled {
			p.fail(ruleCancel, bx, "a cancel of sequence %d of session %s, environment %s, also stopped %s (session %s, environment %s, sequence %d): it answered failure %s", target.Sequence, target.SessionID, target.Environment, b.what, op.SessionID, op.Environment, op.Sequence, rc.Code)
		}
	}
}
