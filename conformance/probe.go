package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// probe is one case's view of the target: a fake Brain for the provider's
// callbacks, a session of its own, and helpers that report failures with
// the rule and the exchange.
type probe struct {
	t       T
	tg      Target
	o       Options
	ctx     context.Context
	brain   *envtest.Brain
	session string
	envs    atomic.Int64
	twins   atomic.Int64
	root    *envtest.Commands // the session's sequence source
}

func newProbe(t T, ctx context.Context, tg Target, o Options) *probe {
	var b [6]byte
	_, _ = rand.Read(b[:])
	brain := envtest.New()
	t.Cleanup(brain.Close)
	if tg.CallbackHost != "" {
		host, err := callbackHost(tg.CallbackHost)
		if err != nil {
			t.Fatalf("Target.CallbackHost (--callback-host, -conformance.callback-host) %q: %v", tg.CallbackHost, err)
		}
		r, url, err := startRelay(brain.URL, host)
		if err != nil {
			t.Fatalf("%v", err)
		}
		t.Cleanup(r.close)
		// Grants name the relay from now on.
		brain.URL = url
	}
	if tg.Client == nil {
		tg.Client = newClient()
	}
	if tg.SetupConfiguration == nil {
		tg.SetupConfiguration = json.RawMessage(`{}`)
	}
	session := "conformance-" + hex.EncodeToString(b[:])
	root := envtest.NewCommands(session, "env0")
	root.Brain = brain
	return &probe{t: t, tg: tg, o: o, ctx: ctx, brain: brain, session: session, root: root}
}

// exchange is one command and its answer, for failure messages.
type exchange struct {
	Request []byte
	Status  int
	Body    []byte
	Resp    *envapi.Response
	Err     error
	// Refused is why Brain refuses Resp, a 200 answer that decodes, as
	// an invalid receipt (envapi.CheckResponse: another sequence, a
	// credential quoted in an identifier, a receipt type the request does
	// not take); nil when Brain takes it. contract/echo judges it; the
	// other cases read the receipt as it came.
	Refused  error
	Sent     time.Time
	Answered time.Time
	// FirstByte is when the first byte of the answer arrived (zero when
	// none did): the answer was written by then, whatever its length.
	FirstByte time.Time
}

func excerpt(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

func (e *exchange) String() string { return e.describe(nil) }

// describe is String with hide applied to the request, the answer and the
// errors before they are cut to excerpts.
func (e *exchange) describe(hide func(string) string) string {
	if e == nil {
		return "(none)"
	}
	if hide == nil {
		hide = func(s string) string { return s }
	}
	var b strings.Builder
	fmt.Fprintf(&b, "POST /v1/operations %s", excerpt([]byte(hide(string(e.Request))), 400))
	if e.Status != 0 {
		fmt.Fprintf(&b, "\n    → %d %s", e.Status, excerpt([]byte(hide(string(e.Body))), 400))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "\n    → error: %s", hide(e.Err.Error()))
	}
	if e.Refused != nil {
		fmt.Fprintf(&b, "\n    → Brain records this answer as an invalid receipt: %s", hide(e.Refused.Error()))
	}
	return b.String()
}

// minHidden is the length from which the provider's token is hidden in
// reports: a shorter one would hide ordinary words.
const minHidden = 4

// hideToken replaces the provider's token in s, and the token without its
// last character (which the auth cases send), with "***": a provider that
// quotes its Authorization header in an answer does not get its token
// printed in a report, a CI log or a JUnit file.
func (p *probe) hideToken(s string) string {
	tok := p.tg.Token
	if len(tok) < minHidden {
		return s
	}
	s = strings.ReplaceAll(s, tok, "***")
	if short := tok[:len(tok)-1]; len(short) >= minHidden {
		s = strings.ReplaceAll(s, short, "***")
	}
	return s
}

// receipt is the receipt type of a valid 200 answer, or a description.
func (e *exchange) receipt() envapi.Receipt {
	if e == nil || e.Resp == nil {
		return envapi.Receipt{}
	}
	return e.Resp.Receipt
}

func (p *probe) report(fatal bool, r rule, ex *exchange, format string, args ...any) {
	p.t.Helper()
	msg := printable(p.hideToken(fmt.Sprintf(format, args...))) + "\n  rule: " + string(r)
	if ex != nil {
		msg += "\n  exchange: " + printable(ex.describe(p.hideToken))
	}
	if fatal {
		p.t.Fatalf("%s", msg)
	}
	p.t.Errorf("%s", msg)
}

// printable escapes what a provider's answer could use to rewrite a
// terminal or a log viewer (control characters other than newline and tab,
// and bytes that are not UTF-8), so that a report shows the answer as it
// was without acting on it.
func printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || !unicode.IsControl(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func (p *probe) fail(r rule, ex *exchange, format string, args ...any) {
	p.t.Helper()
	p.report(false, r, ex, format, args...)
}

func (p *probe) fatal(r rule, ex *exchange, format string, args ...any) {
	p.t.Helper()
	p.report(true, r, ex, format, args...)
}

// binding starts commands for a fresh environment of the probe's session.
func (p *probe) binding() *envtest.Commands {
	return p.root.For(fmt.Sprintf("env%d", p.envs.Add(1)))
}

// twin starts commands for a binding of another session with c's
// environment name, numbered from 1 as every session is: one provider sees
// the same names and sequences from many sessions, each a binding and a
// command of its own.
func (p *probe) twin(c *envtest.Commands) *envtest.Commands {
	tw := envtest.NewCommands(fmt.Sprintf("%s-%d", p.session, p.twins.Add(1)), c.Environment)
	tw.Brain = p.brain
	return tw
}

// sendRaw posts body with token; it never fails the case.
func (p *probe) sendRaw(ctx context.Context, token string, body any) *exchange {
	ex := &exchange{Sent: time.Now()}
	switch v := body.(type) {
	case []byte:
		ex.Request = v
	default:
		ex.Request, _ = json.Marshal(v)
	}
	var mu sync.Mutex
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() {
		mu.Lock()
		defer mu.Unlock()
		if ex.FirstByte.IsZero() {
			ex.FirstByte = time.Now()
		}
	}})
	status, respBody, resp, err := envtest.Post(ctx, p.tg.Client, p.tg.BaseURL, token, body)
	mu.Lock()
	defer mu.Unlock()
	ex.Status, ex.Body, ex.Resp, ex.Err = status, respBody, resp, err
	ex.Answered = time.Now()
	if errors.Is(err, envtest.ErrInvalidResponse) && status == http.StatusOK && len(respBody) <= envapi.MaxResponseBytes {
		// An answer that decodes but that Brain refuses: keep it, and
		// why Brain refuses it.
		if r, derr := envapi.DecodeResponse(respBody); derr == nil {
			ex.Resp, ex.Err, ex.Refused = &r, nil, refusal(ex.Request, r, token)
		}
	}
	return ex
}

// refusal is why Brain refuses r as the answer to the command in request
// posted with token, or nil.
func refusal(request []byte, r envapi.Response, token string) error {
	cmd, err := envapi.DecodeCommand(request)
	if err != nil {
		return nil
	}
	return envapi.CheckResponse(cmd.Operation, r, append(cmd.Operation.Tokens(), token)...)
}

// send posts a command with the target's token; it never fails the case.
func (p *probe) send(cmd any) *exchange { return p.sendRaw(p.ctx, p.tg.Token, cmd) }

// valid reports why ex is not a 200 answer with a well-formed response.
func valid(ex *exchange) error {
	elapsed := ex.Answered.Sub(ex.Sent).Round(time.Millisecond)
	switch {
	case ex.Err != nil && ex.Status == http.StatusOK:
		return fmt.Errorf("answered 200 after %v, but the body is not a valid response: %w", elapsed, ex.Err)
	case ex.Err != nil && ex.Status != 0:
		return fmt.Errorf("answered %d after %v, and reading the body failed: %w", ex.Status, elapsed, ex.Err)
	case ex.Err != nil && errors.Is(ex.Err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %v: %w", elapsed, ex.Err)
	case ex.Err != nil:
		return fmt.Errorf("no answer (after %v): %w", elapsed, ex.Err)
	case ex.Status != http.StatusOK:
		return fmt.Errorf("answered %d, want 200", ex.Status)
	case ex.Resp == nil:
		return errors.New("no response")
	}
	return nil
}

// must sends cmd and fails the case unless it is answered 200 with a
// well-formed response.
func (p *probe) must(r rule, cmd any) *exchange {
	p.t.Helper()
	ex := p.send(cmd)
	if err := valid(ex); err != nil {
		p.fatal(r, ex, "%v", err)
	}
	return ex
}

// accepted sends cmd and fails the case unless the receipt is accepted.
func (p *probe) accepted(r rule, what string, cmd any) *exchange {
	p.t.Helper()
	ex := p.must(r, cmd)
	if got := ex.receipt().Type; got != envapi.ReceiptAccepted {
		p.fatal(r, ex, "%s answered %q, want accepted", what, got)
	}
	return ex
}

// setup sets up a fresh binding and returns its commands.
func (p *probe) setup() *envtest.Commands {
	p.t.Helper()
	c := p.binding()
	p.accepted(ruleLifecycle, "setup", c.Setup(p.tg.SetupConfiguration))
	return c
}

// descriptor returns the target's descriptor of role, skipping the case
// when the target describes none.
func (p *probe) descriptor(role string) Descriptor {
	p.t.Helper()
	d, ok := p.tg.Executes[role]
	if !ok {
		if role == RoleEcho {
			p.t.Fatalf("the target describes no %q execute descriptor; every provider must (see Target.Executes)", role)
		}
		p.t.Skipf("the target describes no %q execute descriptor", role)
	}
	return d
}

// readDescriptor returns the target's read descriptor for a case that
// tells bindings' states apart by its check, failing the case when the
// read checks nothing (it would pass on any binding).
func (p *probe) readDescriptor() Descriptor {
	p.t.Helper()
	d := p.descriptor(RoleRead)
	if d.Check == nil {
		p.t.Fatalf("the target's read descriptor has no check: this case needs one that passes only when the read observes the write's state (Descriptor.Check; in a profile, \"output\" or \"output_contains\")")
	}
	return d
}

// execute sends an execute of d with a tool grant; it never fails the case.
func (p *probe) execute(c *envtest.Commands, d Descriptor, deadlineMs *int64) (*exchange, uint64) {
	cmd := c.Execute(d.Implementation, d.Input, deadlineMs)
	return p.send(cmd), cmd.Operation.Sequence
}

// finishWait bounds how long after its receipt a Tool may take to call
// finish before the suite gives up on it.
func (p *probe) finishWait() time.Duration { return p.o.Grace }

// waitCall waits for a callback of execution seq of session with method,
// for at most d after now.
func (p *probe) waitCall(session string, seq uint64, method string, d time.Duration) (envtest.Call, error) {
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	return p.brain.WaitFor(ctx, envtest.Execution(session, seq, method))
}

// tool runs d as a Tool on c and returns its output: the value of an ok
// finish, else the last ok result service call, else the receipt's output.
// It never fails the case; err describes what went wrong and which rule.
func (p *probe) tool(c *envtest.Commands, d Descriptor) (json.RawMessage, *exchange, rule, error) {
	return p.toolCmd(c.Execute(d.Implementation, d.Input, nil), d)
}

// toolCmd is tool with a prepared execute command.
func (p *probe) toolCmd(cmd envapi.Command, d Descriptor) (json.RawMessage, *exchange, rule, error) {
	session, seq := cmd.Operation.SessionID, cmd.Operation.Sequence
	if g := cmd.Operation.Request.Callback; g != nil {
		// finish is acknowledged finishHold late, so that a finish the
		// provider waited for before answering is told apart from one
		// it sent after (see toolOutcome).
		p.brain.Inject(envapi.MethodFinish, envtest.Fault{Kind: envtest.SlowReply, Token: g.Token, Times: 1, Delay: finishHold})
	}
	ex := p.send(cmd)
	if err := valid(ex); err != nil {
		return nil, ex, ruleResponse, err
	}
	rc := ex.receipt()
	if rc.Type == envapi.ReceiptFailure {
		return nil, ex, ruleFinish, fmt.Errorf("execute failed with %s: %s", rc.Code, rc.Message)
	}
	if rc.Type == envapi.ReceiptAccepted || rc.Type == envapi.ReceiptProgress {
		return nil, ex, ruleFinish, fmt.Errorf("execute answered %q, which leaves the Tool's outcome unknown; this descriptor must answer result or returned", rc.Type)
	}
	if rc.Type != envapi.ReceiptResult && rc.Type != envapi.ReceiptReturned {
		return nil, ex, ruleFinish, fmt.Errorf("execute answered %q, want result or returned", rc.Type)
	}
	// A Tool that answered returned may run its whole natural time
	// before it finishes.
	wait := p.finishWait() + d.Runs
	fin, err := p.waitCall(session, seq, envapi.MethodFinish, wait)
	if err != nil {
		return nil, ex, ruleFinish, fmt.Errorf("no finish call within %v of the receipt: %w%s", wait, err, p.silentHint(session, seq))
	}
	if !fin.Accepted() {
		return nil, ex, ruleFinish, fmt.Errorf("the finish call was refused: %v", fin)
	}
	o, err := p.toolOutcome(session, seq, ex)
	if err != nil {
		return nil, ex, ruleFinish, err
	}
	if o.Status != envapi.StatusOK {
		return nil, ex, ruleFinish, fmt.Errorf("the Tool finished with status %q, want ok: %s", o.Status, excerpt(mustMarshal(o), 300))
	}
	out := o.Value
	if d.Check != nil {
		if err := d.Check(out); err != nil {
			return out, ex, ruleFinish, fmt.Errorf("output %s does not pass the descriptor's check: %w", excerpt(out, 300), err)
		}
	}
	return out, ex, "", nil
}

// silentHint is a hint at an unreachable fake Brain when execution seq of
// session has made no callback at all and the grants name loopback.
func (p *probe) silentHint(session string, seq uint64) string {
	if p.tg.CallbackHost != "" || len(p.brain.CallsFor(session, seq)) > 0 {
		return ""
	}
	return fmt.Sprintf(" (no callback of this execution arrived at all; its grant names %s, on this machine's loopback: a provider in another container or on another host needs the host name or address at which it reaches this machine, --callback-host or Target.CallbackHost)", p.brain.URL)
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

func mustMarshal(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// mustTool runs d as a Tool and fails the case unless it completes and
// its output passes the check.
func (p *probe) mustTool(c *envtest.Commands, d Descriptor, what string) json.RawMessage {
	p.t.Helper()
	out, ex, r, err := p.tool(c, d)
	if err != nil {
		p.fatal(r, ex, "%s: %v", what, err)
	}
	return out
}

// teardown tears a binding down at the end of the case, best effort.
func (p *probe) teardownLater(c *envtest.Commands) {
	p.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.o.Grace)
		defer cancel()
		_ = p.sendRaw(ctx, p.tg.Token, c.Teardown())
	})
}

func contextWithTimeout(p *probe, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, d)
}
