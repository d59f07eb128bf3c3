package envsdk

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/netutil"
)

// DefaultMaxBodyBytes bounds a command body unless Options says otherwise.
const DefaultMaxBodyBytes = 16 << 20

// DefaultStopGrace is how long the handler waits for Execute to return once
// its deadline passed or it was cancelled.
const DefaultStopGrace = 5 * time.Second

// Options configure a handler. The zero value (or nil) serves without
// authentication, which is only for loopback: it then answers only
// requests naming a loopback host (localhost, 127.0.0.1, [::1]).
type Options struct {
	// Token is the bearer token Brain must present. Empty disables
	// authentication, and then only requests naming a loopback host are
	// served (no web page reaches the provider by DNS rebinding).
	Token string
	// MaxBodyBytes bounds a command body (413 beyond it).
	MaxBodyBytes int64
	// MaxAnswerBytes is the largest answer to an operation Brain takes
	// (BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES); zero selects Brain's
	// default, envapi.MaxResponseBytes. Any larger bound is kept, up to
	// the largest length an int holds (no answer is longer). A larger
	// answer is replaced by the failure output_limit.
	MaxAnswerBytes int64
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Client sends callback, context and reporter calls. nil selects a
	// client that bounds a call by its context's deadline (an execution's
	// context carries the execution's), or by two minutes when the
	// context has none.
	Client *http.Client
	// StopGrace is how long to wait for Execute to return after its
	// deadline or cancellation before answering without it.
	StopGrace time.Duration
	// UntrackedBindings turns off the handler's own binding tracking
	// (a second setup of a live binding answers already_exists; an execute
	// or call on a torn-down binding answers unavailable without reaching
	// the provider): every setup, execute and call then reaches the
	// provider, which tracks bindings itself. A repeat of one at the
	// sequence it came with still answers unknown without reaching it.
	UntrackedBindings bool
}

// Causes the handler gives an operation's context besides ErrCancelled and
// ErrDeadline, and claim's answer for a repeated operation.
var (
	errRepeat   = errors.New("envsdk: operation already dispatched")
	errReturned = errors.New("envsdk: operation returned")
)

type handler struct {
	p         Provider
	methods   map[string]Method
	tokenHash [32]byte
	auth      bool
	maxBody   int64
	maxAnswer int
	grace     time.Duration
	log       *slog.Logger
	caller    *caller
	bindings  *bindings // nil when the provider tracks bindings itself
	open      *openTools

	mu      sync.Mutex
	running map[string]*toolRun // by session/environment/sequence, until its work context ends
	seen    map[string]seenOp   // setups, executes and calls already dispatched, or cancelled before they came
	order   []seenAt            // seen, oldest first
	noted   uint64              // the last seenOp.at
}

// seenOp is what the handler remembers of an operation's sequence.
type seenOp struct {
	cancelled bool   // a cancel named it before it came
	at        uint64 // when it was noted, to tell it from a later note of the key
}

// seenAt is one note of key, in the order they were made.
type seenAt struct {
	key string
	at  uint64
}

// maxSeen bounds the memory of dispatched operations kept to refuse
// repeats.
const maxSeen = 1 << 16

// NewHandler serves p at POST /v1/operations.
//
// The order of checks is: bearer token (401, before routing), route (404),
// method (405), body size (413), strict decoding (400 with the field). A
// request type or method the provider does not know is answered with an
// "unsupported" failure receipt.
func NewHandler(p Provider, opts *Options) http.Handler {
	if opts == nil {
		opts = &Options{}
	}
	h := &handler{
		p:       p,
		auth:    opts.Token != "",
		maxBody: opts.MaxBodyBytes,
		grace:   opts.StopGrace,
		log:     opts.Logger,
		caller:  newCaller(opts.Client),
		running: map[string]*toolRun{},
		seen:    map[string]seenOp{},
		open:    newOpenTools(),
	}
	h.tokenHash = sha256.Sum256([]byte(opts.Token))
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	h.maxAnswer = envapi.MaxResponseBytes
	if n := opts.MaxAnswerBytes; n > 0 {
		// No answer is longer than an int counts: a larger bound
		// (Brain takes any int64) bounds nothing more.
		h.maxAnswer = int(min(n, int64(math.MaxInt)))
	}
	if h.grace <= 0 {
		h.grace = DefaultStopGrace
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if mp, ok := p.(MethodProvider); ok {
		h.methods = mp.Methods()
	}
	if !opts.UntrackedBindings {
		h.bindings = newBindings()
	}
	return h
}

func (h *handler) authorized(r *http.Request) bool {
	if !h.auth {
		// Without a token only requests naming a loopback host are
		// served: not a web page reaching the provider by DNS rebinding.
		return netutil.LoopbackHost(r.Host)
	}
	const prefix = "Bearer "
	v := r.Header.Get("Authorization")
	if len(v) <= len(prefix) || v[:len(prefix)] != prefix {
		return false
	}
	got := sha256.Sum256([]byte(v[len(prefix):]))
	return subtle.ConstantTimeCompare(got[:], h.tokenHash[:]) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type httpError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeJSON(w, http.StatusUnauthorized, httpError{Error: "a valid bearer token is required"})
		return
	}
	if r.URL.Path != "/v1/operations" {
		writeJSON(w, http.StatusNotFound, httpError{Error: "no route " + r.URL.Path + "; POST /v1/operations"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, httpError{Error: "use POST"})
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, httpError{Error: fmt.Sprintf("body larger than %d bytes", h.maxBody)})
			return
		}
		writeJSON(w, http.StatusBadRequest, httpError{Error: "read body: " + err.Error()})
		return
	}
	cmd, err := envapi.DecodeCommand(data)
	if err != nil {
		var fe *envapi.FieldError
		errors.As(err, &fe)
		if errors.Is(err, envapi.ErrUnsupported) && cmd.Operation.Sequence > 0 {
			writeJSON(w, http.StatusOK, envapi.NewResponse(cmd.Operation.Sequence,
				envapi.Failure(envapi.CodeUnsupported, fe.Error(), false, nil)))
			return
		}
		body := httpError{Error: err.Error()}
		if fe != nil {
			body.Field = fe.Field
		}
		writeJSON(w, http.StatusBadRequest, body)
		return
	}
	op := cmd.Operation
	// The operation's context continues Brain's trace: a provider's spans
	// started from c.Context() join it.
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	answered := wellFormed(h.run(ctx, op))
	body, receipt, replaced := answerBody(op.Sequence, answered, h.maxAnswer)
	if replaced {
		h.log.Error("answer larger than Brain takes: answered output_limit instead", "session", op.SessionID,
			"environment", op.Environment, "sequence", op.Sequence, "receipt", answered.Type, "code", answered.Code)
	}
	h.log.Info("operation", "session", op.SessionID, "environment", op.Environment,
		"sequence", op.Sequence, "request", op.Request.Type, "receipt", receipt.Type, "code", receipt.Code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (h *handler) newCtx(ctx context.Context, op envapi.Operation) *Ctx {
	c := &Ctx{
		SessionID:        op.SessionID,
		Environment:      op.Environment,
		Sequence:         op.Sequence,
		Binding:          envapi.EnvironmentRef{Name: op.Environment, Sequence: 1},
		Template:         op.Template,
		Request:          op.Request,
		RawConfiguration: op.Configuration,
		ctx:              ctx,
		caller:           h.caller,
		opGrant:          op.Context,
	}
	if op.Binding != nil {
		c.Binding = *op.Binding
	}
	if op.Request.Type == envapi.RequestSetup && op.Request.Configuration != nil {
		c.RawConfiguration = op.Request.Configuration
	}
	if op.Reporter != nil {
		c.reporter = &Reporter{grant: *op.Reporter, caller: h.caller}
	}
	return c
}

func opKey(session, env string, seq uint64) string {
	return fmt.Sprintf("%s/%s/%d", session, env, seq)
}

// run performs one operation and returns its receipt.
func (h *handler) run(parent context.Context, op envapi.Operation) envapi.Receipt {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(errReturned)
	c := h.newCtx(ctx, op)
	defer c.closed.Store(true)

	key := c.BindingKey()
	switch op.Request.Type {
	case envapi.RequestSetup:
		if r, ok := h.claimOnce(op); !ok {
			return r
		}
		if h.bindings != nil {
			if r, ok := h.bindings.beginSetup(key); !ok {
				h.forget(opKey(op.SessionID, op.Environment, op.Sequence)) // refused: it did nothing
				return r
			}
		}
		var res SetupResult
		err := h.guard(func() (err error) { res, err = h.p.Setup(c); return err })
		receipt := envapi.AcceptedOnTurnEnd(res.OnTurnEnd)
		if err == nil {
			receipt = wellFormed(receipt)
			if m, ok := h.methods[res.OnTurnEnd]; receipt.Type == envapi.ReceiptAccepted && res.OnTurnEnd != "" && (!ok || m.Run == nil) {
				// Brain would call it after every turn, and record each
				// answer (unsupported) as a failed cleanup.
				receipt = envapi.Failure(envapi.CodeInvalidOutput, fmt.Sprintf("the setup's on_turn_end names %q, which is not one of the provider's methods", res.OnTurnEnd), false, nil)
			}
			if receipt.Type == envapi.ReceiptFailure {
				// Brain records no binding for a failed setup: what the
				// provider set up is released so that none is left.
				receipt = h.undoSetup(c, receipt)
			}
		}
		if h.bindings != nil {
			h.bindings.endSetup(key, err == nil && receipt.Type == envapi.ReceiptAccepted)
		}
		if err != nil {
			receipt = h.failure(c, err)
		}
		if receipt.Type == envapi.ReceiptFailure {
			// A failed setup left no binding (its provider set up
			// nothing, or was told to tear it down): it has no effect
			// to apply twice, and a setup at its sequence is a new
			// attempt. One whose outcome is unknown is not run again.
			h.forget(opKey(op.SessionID, op.Environment, op.Sequence))
		}
		return receipt
	case envapi.RequestExecute, envapi.RequestCall:
		if h.bindings != nil {
			if r, ok := h.bindings.usable(key); !ok {
				return r
			}
		}
		if op.Request.Type == envapi.RequestCall {
			return h.call(c, op)
		}
		return h.execute(c, cancel, op)
	case envapi.RequestCancel:
		return h.cancel(c, op)
	case envapi.RequestDetach:
		// Work that went on after returned ends with the binding.
		h.stopReturned(key, errReleased)
		if err := h.guard(func() error { return h.p.Detach(c) }); err != nil {
			return h.failure(c, err)
		}
		return envapi.Accepted()
	case envapi.RequestTeardown:
		h.stopReturned(key, errReleased)
		if err := h.guard(func() error { return h.p.Teardown(c) }); err != nil {
			return h.failure(c, err)
		}
		if h.bindings != nil {
			h.bindings.tornDown(key)
		}
		return envapi.Accepted()
	}
	return envapi.Failure(envapi.CodeUnsupported, "unsupported request type "+string(op.Request.Type), false, nil)
}

// undoSetup tears down a binding whose setup succeeded but is answered
// with refused, a failure receipt; a failed teardown is kept as evidence
// in details.cleanup_error.
func (h *handler) undoSetup(c *Ctx, refused envapi.Receipt) envapi.Receipt {
	err := h.guard(func() error { return h.p.Teardown(c) })
	if err == nil {
		return refused
	}
	h.log.Error("teardown of a refused setup failed", "session", c.SessionID, "environment", c.Environment, "error", err)
	e := KeepFirst(&Error{Code: refused.Code, Message: refused.Message, Details: refused.Details}, err)
	return e.receipt()
}

// guard runs f, turning a panic into an error, and a nil *Error that f
// answers as its error into one that says so: such an error is no
// failure code to answer, and its methods would panic.
func (h *handler) guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("provider panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("provider panicked: %v", r)
		}
	}()
	err = f()
	if e, ok := errors.AsType[*Error](err); ok && e == nil {
		err = fmt.Errorf("provider answered a nil %T as its error", e)
	}
	return err
}

// failure maps an operation error to a failure or unknown receipt, keeping
// the first stop cause.
func (h *handler) failure(c *Ctx, err error) envapi.Receipt {
	var e *Error
	isTyped := errors.As(err, &e)
	if isTyped && (e.Code == envapi.CodeTimeout || e.Code == envapi.CodeCancelled) {
		return e.receipt()
	}
	if c.ctx.Err() != nil {
		switch cause := context.Cause(c.ctx); {
		case errors.Is(cause, ErrDeadline):
			return stopFailure(envapi.CodeTimeout, "the invocation's deadline expired", err)
		case errors.Is(cause, ErrCancelled):
			return stopFailure(envapi.CodeCancelled, "the invocation was cancelled", err)
		}
	}
	switch {
	case errors.Is(err, ErrUnknown), errors.Is(err, ErrAckLost):
		// A lost acknowledgement of the provider's own Finish leaves the
		// outcome as uncertain as the handler's own finish would.
		return envapi.Unknown(err.Error())
	case isTyped:
		return e.receipt()
	}
	return envapi.Failure(envapi.CodeEnvironmentFailed, err.Error(), false, nil)
}

// stopFailure answers a stop cause; a provider error other than the bare
// context error is kept as evidence in details: {"error": message}, with
// the code and details of a typed failure ({"error", "code", "details"}).
func stopFailure(code, message string, err error) envapi.Receipt {
	var details json.RawMessage
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		type evidence struct {
			Error   string          `json:"error"`
			Code    string          `json:"code,omitempty"`
			Details json.RawMessage `json:"details,omitempty"`
		}
		ev := evidence{Error: err.Error()}
		if e, ok := errors.AsType[*Error](err); ok {
			ev = evidence{Error: e.Message, Code: e.Code, Details: e.Details}
		}
		var merr error
		if details, merr = json.Marshal(ev); merr != nil {
			// Details that are not JSON: the message is the evidence.
			details, _ = json.Marshal(evidence{Error: err.Error()})
		}
	}
	return envapi.Failure(code, message, false, details)
}

func (h *handler) call(c *Ctx, op envapi.Operation) envapi.Receipt {
	req := op.Request
	m, ok := h.methods[req.Name]
	if !ok || m.Run == nil {
		return envapi.Failure(envapi.CodeUnsupported, "unsupported method "+req.Name, false, nil)
	}
	// A method is the provider's code, with effects of its own (a reset,
	// a release): a repeat of the call runs none of them again.
	if r, ok := h.claimOnce(op); !ok {
		return r
	}
	var r envapi.Receipt
	err := h.guard(func() error {
		out, err := m.Run(c, req.Input)
		if err != nil {
			return err
		}
		// The output's own MarshalJSON is the provider's code too.
		r, err = Output(out)
		return err
	})
	if err != nil {
		return h.failure(c, err)
	}
	return r
}

func (h *handler) cancel(c *Ctx, op envapi.Operation) envapi.Receipt {
	key := opKey(op.SessionID, op.Environment, op.Request.TargetSequence)
	h.mu.Lock()
	// The cancel is an operation of its own, identified by its sequence:
	// a repeat of it is a copy the network made, and the provider's
	// Cancel (which may have effects of its own) does not run again.
	own := opKey(op.SessionID, op.Environment, op.Sequence)
	if prev, dup := h.seen[own]; dup {
		h.mu.Unlock()
		if prev.cancelled {
			return notRerun(op.Sequence, ErrCancelled)
		}
		return notRerun(op.Sequence, errRepeat)
	}
	h.rememberLocked(own, false)
	run := h.running[key]
	if _, seen := h.seen[key]; run == nil && !seen {
		// The cancel overtook its execute (Brain sends both once): the
		// execute, when it comes, answers cancelled without running (as
		// would any operation that came at that sequence: it is the one
		// the cancel names).
		h.rememberLocked(key, true)
	}
	h.mu.Unlock()
	if run != nil {
		// A running execute, or a Tool that answered returned and has
		// not finished: its work context ends, and its grant is revoked
		// before the cancel is answered. A cancel of an execute that
		// finished, or of one never seen, changes nothing else.
		run.end(ErrCancelled)
	}
	if cn, ok := h.p.(Canceler); ok {
		if err := h.guard(func() error { return cn.Cancel(c, op.Request.TargetSequence) }); err != nil {
			return h.failure(c, err)
		}
	}
	return envapi.Accepted()
}

// claim records an operation as dispatched and, for an execute (run not
// nil), its work as running. It answers errRepeat for a repeat, and
// ErrCancelled for an operation whose cancel came first.
func (h *handler) claim(key string, run *toolRun) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if op, dup := h.seen[key]; dup {
		if op.cancelled {
			return ErrCancelled // it never runs
		}
		return errRepeat
	}
	h.rememberLocked(key, false)
	if run != nil {
		h.running[key] = run
		h.track(key, run)
	}
	return nil
}

// claimOnce claims op, a setup or a call, for its one run; when it must
// not run it answers false and the receipt a repeat of an execute gets.
func (h *handler) claimOnce(op envapi.Operation) (envapi.Receipt, bool) {
	if err := h.claim(opKey(op.SessionID, op.Environment, op.Sequence), nil); err != nil {
		return notRerun(op.Sequence, err), false
	}
	return envapi.Receipt{}, true
}

// forget drops key from the operations dispatched: an operation at its
// sequence runs again.
func (h *handler) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, key)
}

// notRerun answers an operation claim refused with err: cancelled when its
// cancel came first, unknown when its sequence was already dispatched (its
// first answer may or may not have reached Brain; it is not run again to
// find out).
func notRerun(seq uint64, err error) envapi.Receipt {
	if errors.Is(err, ErrCancelled) {
		return envapi.Failure(envapi.CodeCancelled, "the invocation was cancelled before it arrived", false, nil)
	}
	return envapi.Unknown(fmt.Sprintf("sequence %d was already dispatched to this provider; it is never run twice", seq))
}

// rememberLocked notes key among the operations dispatched (or cancelled
// before they came), forgetting the oldest past maxSeen.
func (h *handler) rememberLocked(key string, cancelled bool) {
	h.noted++
	h.seen[key] = seenOp{cancelled: cancelled, at: h.noted}
	h.order = append(h.order, seenAt{key, h.noted})
	if len(h.order) > maxSeen {
		// A key forgotten and noted again since is newer than this note.
		if old := h.order[0]; h.seen[old.key].at == old.at {
			delete(h.seen, old.key)
		}
		h.order = h.order[1:]
	}
}

func (h *handler) execute(c *Ctx, stopOp context.CancelCauseFunc, op envapi.Operation) envapi.Receipt {
	req := op.Request
	var deadline time.Time
	// A deadline beyond what a time.Duration holds (about 292 years) is
	// no deadline.
	if req.DeadlineMs != nil && *req.DeadlineMs > 0 && *req.DeadlineMs <= int64(math.MaxInt64/time.Millisecond) {
		deadline = time.Now().Add(time.Duration(*req.DeadlineMs) * time.Millisecond)
	}
	run := newRun(c, stopOp, deadline)
	x := &Execution{
		Implementation: req.Implementation,
		Input:          req.Input,
		Deadline:       deadline,
		Invocation:     newInvocation(req.Callback, h.caller),
		ctx:            run.ctx,
	}
	if x.Invocation != nil {
		x.Invocation.deadline = deadline
	}
	run.inv = x.Invocation
	// The work context ends with the answer unless the Tool goes on after
	// it (returned).
	goesOn := false
	defer func() {
		if !goesOn {
			run.end(errReturned)
		}
	}()
	key := opKey(op.SessionID, op.Environment, op.Sequence)
	if err := h.claim(key, run); err != nil {
		return notRerun(op.Sequence, err)
	}
	if req.DeadlineMs != nil && *req.DeadlineMs <= 0 {
		// The time ran out on the way: nothing runs.
		return envapi.Failure(envapi.CodeTimeout, "the invocation's deadline had passed when it arrived", false, nil)
	}
	if !deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		c.ctx, cancelDeadline = context.WithDeadlineCause(c.ctx, deadline, ErrDeadline)
		defer cancelDeadline()
	}

	type answer struct {
		r   envapi.Receipt
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		a.err = h.guard(func() (err error) { a.r, err = h.p.Execute(c, x); return err })
		done <- a
	}()
	var a answer
	select {
	case a = <-done:
	case <-c.ctx.Done():
		grace := time.NewTimer(h.grace)
		defer grace.Stop()
		select {
		case a = <-done:
		case <-grace.C:
			r := h.failure(c, c.ctx.Err())
			if r.Type == envapi.ReceiptFailure {
				r = KeepFirst(&Error{Code: r.Code, Message: r.Message, Details: r.Details},
					fmt.Errorf("the provider did not stop within %s", h.grace)).receipt()
			}
			return r
		}
	}
	if a.err == nil && a.r.Type == envapi.ReceiptFailure && c.ctx.Err() != nil {
		// A failure receipt after the stop is answered as a failure
		// returned as an error is: the stop stays the code, and the
		// provider's failure is its evidence.
		a.err = &Error{Code: a.r.Code, Message: a.r.Message, Retryable: a.r.Retryable, Details: a.r.Details}
	}
	if a.err != nil {
		return h.failure(c, a.err)
	}
	if c.ctx.Err() != nil && a.r.Type != envapi.ReceiptUnknown {
		// The deadline or a cancel came first: the stop is the answer, and
		// a result the provider reached afterwards is never finished.
		return h.failure(c, c.ctx.Err())
	}
	r := h.complete(op.Sequence, x, a.r)
	if r.Type == envapi.ReceiptReturned {
		// The Tool goes on after this answer until it finishes.
		goesOn = true
		h.keepOpen(x, run)
	}
	return r
}

// complete finishes a Tool whose Execute returned a result, when the grant
// lists finish and the provider has not finished it itself. A receipt
// whose answer to operation seq would be larger than Brain takes is
// answered output_limit, and nothing is finished: Brain would take
// neither.
func (h *handler) complete(seq uint64, x *Execution, r envapi.Receipt) envapi.Receipt {
	switch r.Type {
	case envapi.ReceiptAccepted, envapi.ReceiptProgress, envapi.ReceiptResult, envapi.ReceiptReturned,
		envapi.ReceiptFailure, envapi.ReceiptUnknown:
	default:
		return envapi.Failure(envapi.CodeEnvironmentFailed, fmt.Sprintf("provider answered an invalid receipt type %q", r.Type), false, nil)
	}
	if r = wellFormed(r); r.Type == envapi.ReceiptFailure {
		return r
	}
	if r.Type != envapi.ReceiptResult || !x.Invocation.Granted(envapi.MethodFinish) {
		return r
	}
	if f, over := oversized(seq, r, h.maxAnswer); over {
		h.log.Error("answer larger than Brain takes: not finished, answered output_limit instead",
			"sequence", seq, "receipt", r.Type)
		return f
	}
	ctx, cancel := finishContext(x.Deadline)
	defer cancel()
	if x.Invocation.settled(ctx) {
		// The provider finished the Tool itself: its own Finish, waited
		// for when it was on its way, is the attempt.
		return r
	}
	out := envapi.OK(r.Output)
	_, err := x.Invocation.Finish(ctx, &out)
	if errors.Is(err, ErrFinished) {
		// The provider finished the Tool itself meanwhile: nothing was
		// sent here.
		return r
	}
	var refused *CallError
	if errors.As(err, &refused) && errors.Is(err, ErrRefused) {
		// Brain refused the finish: nothing was committed. A cancel or
		// the deadline that came meanwhile is why (Brain closes the Tool
		// before it sends the cancel), and is the answer.
		if stop := x.Invocation.closed(envapi.MethodFinish); stop != nil {
			err = stop
		} else {
			return refusedFinish(refused)
		}
	}
	if errors.Is(err, ErrNotSent) {
		// The finish never reached Brain: nothing was committed. A stop
		// that came meanwhile is the answer, as for a refusal.
		if stop := x.Invocation.closed(envapi.MethodFinish); stop != nil {
			err = stop
		} else {
			details, _ := json.Marshal(map[string]string{"error": err.Error()})
			return envapi.Failure(envapi.CodeEnvironmentFailed,
				"the finish of the result never reached Brain; nothing was committed: "+err.Error(), false, details)
		}
	}
	if err != nil {
		// Brain cancelled the Tool, or its deadline passed, after
		// Execute answered: the stop is the answer.
		switch {
		case errors.Is(err, ErrCancelled):
			return envapi.Failure(envapi.CodeCancelled, "the invocation was cancelled", false, nil)
		case errors.Is(err, ErrDeadline):
			return envapi.Failure(envapi.CodeTimeout, "the invocation's deadline expired", false, nil)
		}
		return envapi.Unknown("the completion acknowledgement was lost; the result may or may not be committed: " + err.Error())
	}
	return r
}

// refusedFinish answers an execute whose finish Brain refused: a failure
// with Brain's code (environment_failed when it sent none that is an
// identifier), and Brain's status, code and message in details.
func refusedFinish(ce *CallError) envapi.Receipt {
	code := ce.Code
	if !envapi.ValidIdentifier(code) {
		code = envapi.CodeEnvironmentFailed
	}
	details, _ := json.Marshal(struct {
		Status  int    `json:"status"`
		Code    string `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}{ce.Status, ce.Code, ce.Message})
	return envapi.Failure(code, "Brain refused the finish of the result; nothing was committed: "+ce.Error(), false, details)
}

// finishContext bounds a finish by the invocation's deadline (the callback
// stays valid until then), or by a minute when there is none.
func finishContext(deadline time.Time) (context.Context, context.CancelFunc) {
	if deadline.IsZero() || time.Until(deadline) < time.Second {
		return context.WithTimeout(context.Background(), time.Minute)
	}
	return context.WithDeadline(context.Background(), deadline)
}

// wellFormed answers r when it encodes to a receipt Brain decodes, and
// otherwise a failure naming what is wrong with it, so that a receipt the
// provider built wrong (an output that is not JSON, a code that is not an
// identifier) never becomes an empty or undecodable answer. The message
// of a failure or unknown receipt is cut to envapi.MaxMessageLen, as
// envapi.Failure and envapi.Unknown cut it and as Finish cuts an
// outcome's: a long message is no malformed receipt.
func wellFormed(r envapi.Receipt) envapi.Receipt {
	if r.Type == envapi.ReceiptFailure || r.Type == envapi.ReceiptUnknown {
		r.Message = envapi.Truncate(r.Message)
	}
	data, err := json.Marshal(r)
	if err == nil {
		_, err = envapi.DecodeReceipt(data)
	}
	if err != nil {
		return envapi.Failure(envapi.CodeInvalidOutput, fmt.Sprintf("the provider answered a malformed %s receipt: %v", r.Type, err), false, nil)
	}
	return r
}
