package envsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Execution is one execute request as the provider sees it.
type Execution struct {
	// Implementation is the opaque descriptor of what to run.
	Implementation json.RawMessage
	// Input is the invocation's input.
	Input json.RawMessage
	// Deadline is when the invocation must stop; zero means none.
	Deadline time.Time
	// Invocation is the client of the execute's callback grant, nil when
	// the execute carried none.
	Invocation *Invocation

	// ctx is the Tool's work context (see Context).
	ctx context.Context
}

// Context is the context of the Tool's work. Unlike c.Context(), which
// ends when Execute returns, it lives on after Execute answers returned,
// for the work that finishes the Tool later, and ends when:
//
//   - Brain cancels the execution (context.Cause is ErrCancelled);
//   - its deadline passes (ErrDeadline);
//   - its binding is detached or torn down;
//   - Serve returns (its graceful stop waits for the Tool first, within
//     its grace);
//   - Finish was answered, or Execute answered anything but returned.
//
// While Execute runs it also ends when Brain cancels or the deadline
// passes, as c.Context() does.
func (x *Execution) Context() context.Context {
	if x.ctx == nil {
		return context.Background()
	}
	return x.ctx
}

// Invocation is the client of one execution's callback grant. It belongs to
// that execution only: never keep it for another.
//
// A method the grant does not list fails with ErrNotGranted without sending
// anything. Finish is attempted exactly once; after it, emissions fail with
// ErrFinished. The methods are safe on a nil *Invocation (they answer
// ErrNotGranted), so a provider need not check whether a callback came.
type Invocation struct {
	grant  envapi.Grant
	caller *caller

	// deadline is the execution's deadline (zero: none); the grant is
	// not valid after it.
	deadline time.Time

	mu       sync.Mutex
	finished bool
	// finishing is closed once the Finish attempt on its way has its
	// outcome; nil while none is on its way.
	finishing chan struct{}
	// answered is set once the Finish attempt has been answered (or
	// failed).
	answered bool
	// revoked is why Brain no longer honours the grant (ErrCancelled,
	// ErrDeadline), nil while it does.
	revoked error
	// finishDone, when set, is called once the Finish attempt has been
	// answered (or failed).
	finishDone func()
}

func newInvocation(g *envapi.Grant, c *caller) *Invocation {
	if g == nil {
		return nil
	}
	return &Invocation{grant: *g, caller: c}
}

// String shows the grant the invocation calls, without its token; so do
// %#v and log/slog.
func (i *Invocation) String() string {
	if i == nil {
		return "envsdk.Invocation(nil)"
	}
	return "envsdk.Invocation" + i.grant.String()
}

// GoString is String for %#v.
func (i *Invocation) GoString() string { return i.String() }

// LogValue logs the invocation's grant without its token.
func (i *Invocation) LogValue() slog.Value {
	if i == nil {
		return slog.StringValue("<nil>")
	}
	return i.grant.LogValue()
}

// revoke notes that Brain no longer honours the grant, for cause.
func (i *Invocation) revoke(cause error) {
	if i == nil {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.revoked == nil {
		i.revoked = cause
	}
}

// closed answers the error of a call of method made after Brain cancelled
// the execution or its deadline passed (the grant is revoked then), and
// nil before.
func (i *Invocation) closed(method string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.closedLocked(method)
}

// closedLocked is closed for a caller holding i.mu.
func (i *Invocation) closedLocked(method string) error {
	cause := i.revoked
	if cause == nil && !i.deadline.IsZero() && !time.Now().Before(i.deadline) {
		cause = ErrDeadline
	}
	if cause == nil {
		return nil
	}
	return fmt.Errorf("%w: %s not sent: %w", ErrClosed, method, cause)
}

// Granted reports whether the grant lists method.
func (i *Invocation) Granted(method string) bool {
	return i != nil && i.grant.Allows(method)
}

func (i *Invocation) raw(ctx context.Context, method string, input any) (json.RawMessage, error) {
	if i == nil {
		return nil, fmt.Errorf("%w: %s (no callback grant)", ErrNotGranted, method)
	}
	if i.grant.Allows(method) {
		if err := i.closed(method); err != nil {
			return nil, err
		}
	}
	return i.caller.call(ctx, &i.grant, method, input)
}

// emission runs a method that Finish closes.
func (i *Invocation) emission(ctx context.Context, method string, input any) (uint64, error) {
	if i == nil || !i.grant.Allows(method) {
		_, err := i.raw(ctx, method, input)
		return 0, err
	}
	i.mu.Lock()
	done := i.finished
	i.mu.Unlock()
	if done {
		return 0, fmt.Errorf("%w: %s after finish", ErrFinished, method)
	}
	raw, err := i.raw(ctx, method, input)
	if err != nil {
		return 0, err
	}
	return parseSequence(method, raw)
}

// Emit appends an extension event {event_type, data} and returns its
// committed sequence.
func (i *Invocation) Emit(ctx context.Context, eventType string, data any) (uint64, error) {
	d, err := marshalInput(data)
	if err != nil {
		return 0, err
	}
	return i.emission(ctx, envapi.MethodEmit, envapi.EmitInput{EventType: eventType, Data: d})
}

// Result records a Tool result without ending the execution. An outcome
// Brain would refuse (see Finish) fails before anything is sent.
func (i *Invocation) Result(ctx context.Context, o envapi.Outcome) (uint64, error) {
	return i.outcomeEmission(ctx, envapi.MethodResult, &o)
}

// Returned ends the synchronous phase; o may be nil (no new result). An
// outcome Brain would refuse (see Finish) fails before anything is sent.
func (i *Invocation) Returned(ctx context.Context, o *envapi.Outcome) (uint64, error) {
	return i.outcomeEmission(ctx, envapi.MethodReturned, o)
}

// outcomeEmission runs an emission whose input is an outcome.
func (i *Invocation) outcomeEmission(ctx context.Context, method string, o *envapi.Outcome) (uint64, error) {
	if !i.Granted(method) {
		return i.emission(ctx, method, nil)
	}
	in, err := outcomeInput(method, o)
	if err != nil {
		return 0, err
	}
	return i.emission(ctx, method, in)
}

// outcomeInput encodes o (nil: no new result) as the input of method,
// its messages cut to envapi.MaxMessageLen as a receipt's are (o itself
// is left as it is). An outcome that does not encode, or that Brain
// refuses (a status that is not one of the five, an error outcome without
// an error code that is an identifier), is an error before anything is
// sent.
func outcomeInput(method string, o *envapi.Outcome) (json.RawMessage, error) {
	if o != nil {
		if err := checkOutcome(o); err != nil {
			return nil, fmt.Errorf("envsdk: %s not sent: the outcome is not one Brain takes: %w", method, err)
		}
		o = cutOutcome(o)
	}
	return marshalInput(optionalOutcome(o))
}

// cutOutcome answers a copy of o whose message, and whose error's
// message, are cut to envapi.MaxMessageLen.
func cutOutcome(o *envapi.Outcome) *envapi.Outcome {
	c := *o
	c.Message = envapi.Truncate(c.Message)
	if c.Error != nil {
		e := *c.Error
		e.Message = envapi.Truncate(e.Message)
		c.Error = &e
	}
	return &c
}

// checkOutcome refuses an outcome as Brain does: by its status, and by
// the code of an error outcome.
func checkOutcome(o *envapi.Outcome) error {
	switch o.Status {
	case envapi.StatusOK, envapi.StatusTimeout, envapi.StatusCancelled, envapi.StatusUnknown:
		return nil
	case envapi.StatusError:
		if o.Error == nil {
			return &envapi.FieldError{Field: "error", Reason: "is required for status error"}
		}
		if !envapi.ValidIdentifier(o.Error.Code) {
			return &envapi.FieldError{Field: "error.code", Reason: fmt.Sprintf("%.140q is not an identifier (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$)", o.Error.Code)}
		}
		return nil
	}
	return &envapi.FieldError{Field: "status", Reason: fmt.Sprintf("unknown outcome status %.140q", string(o.Status)), Unsupported: true}
}

// Finish completes the Tool with o (nil: no new result), its messages
// cut to envapi.MaxMessageLen. It is attempted exactly once: a second
// call fails with ErrFinished, once the first has
// its outcome (a call made while the first is on its way waits for it, and
// is sent when the first never reached Brain). When the
// acknowledgement does not arrive (no answer, a 5xx answer, an answer
// that is not a committed sequence) the error wraps ErrAckLost — the
// outcome may or may not be committed, and it must not be sent again.
// When Brain refuses it (a 4xx answer; 401 once Brain closed the Tool)
// the error is the *CallError with Brain's status and code, matching
// ErrRefused and not ErrAckLost: nothing was committed. It is not sent
// again either. An outcome that does not encode as JSON, one Brain
// refuses (a status that is not one of the five, an error outcome whose
// code is not an identifier: the error holds an *envapi.FieldError), or a
// ctx that has already ended, fails before anything is sent, and Finish
// may then be called again. So does a Finish that never reached Brain (every
// connection was refused): its error matches ErrNotSent, not ErrAckLost.
// One whose body Brain refuses for its size (413, past
// BRAIN_MAX_REQUEST_BYTES or, for an outcome,
// BRAIN_MAX_ENVIRONMENT_RESPONSE_BYTES) is no attempt either: its error matches
// ErrTooLarge and ErrRefused, and Finish may be called again with a
// smaller outcome.
//
// Once Brain cancelled the execution or its deadline passed, Brain has
// closed the Tool itself (cancelled, timeout) and revoked the grant: every
// method, Finish among them, then fails with an error matching ErrClosed
// and the cause (ErrCancelled or ErrDeadline) without sending anything.
func (i *Invocation) Finish(ctx context.Context, o *envapi.Outcome) (uint64, error) {
	if i == nil || !i.grant.Allows(envapi.MethodFinish) {
		_, err := i.raw(ctx, envapi.MethodFinish, nil)
		return 0, err
	}
	// An outcome that does not encode, or that Brain would refuse, is
	// refused before anything is sent: that is no lost acknowledgement,
	// and finish stays available.
	in, err := outcomeInput(envapi.MethodFinish, o)
	if err != nil {
		return 0, err
	}
	// So is a grant Brain revoked, and a context that has already ended:
	// nothing would be sent. The grant is checked as the attempt is
	// taken, under one lock: a cancel answered before that fails it
	// here, and one answered after it meets a finish already on its way,
	// which Brain refuses.
	//
	// A Finish called while another is on its way waits for that one's
	// outcome: when it never reached Brain, it was not attempted, and
	// this one is.
	for {
		ctxErr := ctx.Err()
		i.mu.Lock()
		if err := i.closedLocked(envapi.MethodFinish); err != nil {
			i.mu.Unlock()
			return 0, err
		}
		if ctxErr != nil {
			i.mu.Unlock()
			return 0, fmt.Errorf("envsdk: %s not sent: %w", envapi.MethodFinish, ctxErr)
		}
		w := i.finishing
		if w == nil {
			break
		}
		i.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
		}
	}
	if i.finished {
		i.mu.Unlock()
		return 0, fmt.Errorf("%w: finish called twice", ErrFinished)
	}
	i.finished = true
	w := make(chan struct{})
	i.finishing = w
	i.mu.Unlock()
	raw, err := i.caller.call(ctx, &i.grant, envapi.MethodFinish, in)
	notSent := errors.Is(err, ErrNotSent) || errors.Is(err, ErrTooLarge)
	i.mu.Lock()
	if notSent {
		// Nothing reached Brain, or Brain refused the body unread for its
		// size: that was no attempt, and finish stays available.
		i.finished = false
	}
	i.finishing = nil
	close(w)
	i.mu.Unlock()
	if notSent {
		return 0, err
	}
	// The work context ends once this attempt is answered, not before:
	// a Tool that answers returned while its finish is on the way keeps
	// it until then.
	defer i.finishAnswered()
	if errors.Is(err, ErrRefused) {
		// Brain answered: nothing was committed.
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrAckLost, err)
	}
	seq, err := parseSequence(envapi.MethodFinish, raw)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrAckLost, err)
	}
	return seq, nil
}

// finishAnswered notes that the Finish attempt has been answered and
// calls the function afterFinish arranged, if any.
func (i *Invocation) finishAnswered() {
	i.mu.Lock()
	i.answered = true
	done := i.finishDone
	i.mu.Unlock()
	if done != nil {
		done()
	}
}

// afterFinish arranges for done to be called once the Finish attempt has
// been answered, whether it is still to come or on its way; it reports
// false, without arranging anything, when the attempt was answered
// already.
func (i *Invocation) afterFinish(done func()) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.answered {
		return false
	}
	i.finishDone = done
	return true
}

// settled waits until no Finish attempt is on its way, or ctx ends, and
// reports whether Finish was attempted.
func (i *Invocation) settled(ctx context.Context) bool {
	for {
		i.mu.Lock()
		w, finished := i.finishing, i.finished
		i.mu.Unlock()
		if w == nil {
			return finished
		}
		select {
		case <-w:
		case <-ctx.Done():
			return finished
		}
	}
}

// Finished reports whether Finish was attempted (or is on its way).
func (i *Invocation) Finished() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.finished
}

func optionalOutcome(o *envapi.Outcome) any {
	if o == nil {
		return nil
	}
	return *o
}

// Model calls the session's model with a ModelRequest and returns the
// ModelResult.
func (i *Invocation) Model(ctx context.Context, req any) (json.RawMessage, error) {
	return i.raw(ctx, envapi.MethodModel, req)
}

// Telemetry sends a best-effort diagnostic record.
func (i *Invocation) Telemetry(ctx context.Context, record any) error {
	_, err := i.raw(ctx, envapi.MethodTelemetry, record)
	return err
}

// Environments sends an environment control request.
func (i *Invocation) Environments(ctx context.Context, req envapi.ControlRequest) (json.RawMessage, error) {
	return i.raw(ctx, envapi.MethodEnvironments, req)
}

// Events reads the page of events after the cursor (an Agentloop service).
func (i *Invocation) Events(ctx context.Context, after uint64) (json.RawMessage, error) {
	return i.raw(ctx, envapi.MethodEvents, after)
}

// Dispatch starts Tool calls and returns their ToolReturns in call order.
// No calls (nil too) are sent as an empty array. An answer that is not one
// ToolReturn per call, in call order (by call_id), is an error.
func (i *Invocation) Dispatch(ctx context.Context, calls []envapi.ToolInvocation) ([]envapi.ToolReturn, error) {
	if calls == nil {
		calls = []envapi.ToolInvocation{}
	}
	raw, err := i.raw(ctx, envapi.MethodDispatch, calls)
	if err != nil {
		return nil, err
	}
	return decodeToolReturns(raw, calls)
}

// SetTranscript saves the transcript (a message array). A nil slice is
// the empty transcript and is sent as an empty array.
func (i *Invocation) SetTranscript(ctx context.Context, messages any) (uint64, error) {
	if v := reflect.ValueOf(messages); v.Kind() == reflect.Slice && v.IsNil() {
		if _, raw := messages.(json.RawMessage); !raw {
			messages = []struct{}{}
		}
	}
	return i.sequenceCall(ctx, envapi.MethodSetTranscript, messages)
}

// KVRead reads key; found is false when the key is absent, and a stored
// JSON null is found with value "null". Keys are identifiers
// (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$): Brain refuses any other key in
// the three KV methods.
func (i *Invocation) KVRead(ctx context.Context, key string) (value json.RawMessage, found bool, err error) {
	raw, err := i.raw(ctx, envapi.MethodKVRead, key)
	if err != nil {
		return nil, false, err
	}
	return decodeKVRead(raw)
}

// KVPut stores value under key.
func (i *Invocation) KVPut(ctx context.Context, key string, value any) (uint64, error) {
	v, err := marshalInput(value)
	if err != nil {
		return 0, err
	}
	return i.sequenceCall(ctx, envapi.MethodKVPut, envapi.KVPut{Key: key, Value: v})
}

// KVDelete removes key from the current state, keeping history.
func (i *Invocation) KVDelete(ctx context.Context, key string) (uint64, error) {
	return i.sequenceCall(ctx, envapi.MethodKVDelete, key)
}

func (i *Invocation) sequenceCall(ctx context.Context, method string, input any) (uint64, error) {
	raw, err := i.raw(ctx, method, input)
	if err != nil {
		return 0, err
	}
	return parseSequence(method, raw)
}
