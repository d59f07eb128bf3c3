package loophost

import (
	"bytes"
	"context"
	cryptorand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/brain/tool"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// ErrNoTools is answered when the host was opened without a tools
// directory.
var ErrNoTools = errors.New("loophost: tools are not enabled")

// ErrToolNotAdmitted is wrapped when an implementation names a Tool module
// that is not admitted (unknown, rejected, or an agentloop module).
var ErrToolNotAdmitted = errors.New("loophost: tool is not admitted")

// errDeadline is the cause of an invocation's own deadline.
var errDeadline = errors.New("loophost: tool deadline passed")

// ToolServices is the service table of one tool invocation; the engine's
// execution (session.Services) is one. Call takes and answers the JSON of
// the callback API's ExecutionCall.
type ToolServices interface {
	Call(ctx context.Context, method string, input json.RawMessage) (json.RawMessage, error)
}

// ToolCall is one tool invocation.
type ToolCall struct {
	// ID is the admitted Tool module.
	ID string
	// Input is the tool input; Configuration the environment's.
	Input         json.RawMessage
	Configuration json.RawMessage
	// Deadline ends the invocation with a timeout failure (zero: none).
	Deadline time.Time
	// Grants are the Tool's capabilities (nil: none).
	Grants *Grants
	// Services reaches the engine; nil refuses every service call.
	Services ToolServices
}

// toolModule answers the compiled Tool module id, fetching one admitted
// on another node of the cluster first (Options.SharedTools).
func (h *Host) toolModule(ctx context.Context, id string) (*module, error) {
	if h.tools == nil {
		return nil, ErrNoTools
	}
	if err := h.locate(ctx, h.tools, id); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	if m := h.tools.loaded[id]; m != nil {
		return m, nil
	}
	if a, ok := h.tools.rejects[id]; ok && a.Error != nil {
		return nil, fmt.Errorf("%w: %s was rejected: %s", ErrToolNotAdmitted, id, a.Error.Message)
	}
	if h.loops.loaded[id] != nil {
		return nil, fmt.Errorf("%w: %s is an agentloop module", ErrToolNotAdmitted, id)
	}
	return nil, fmt.Errorf("%w: %s", ErrToolNotAdmitted, id)
}

// toolInvocation is the wire form of a run's invocation.
type toolInvocation struct {
	Input         json.RawMessage `json:"input"`
	Configuration json.RawMessage `json:"configuration"`
	DeadlineAtMs  int64           `json:"deadline_at_ms"`
}

// RunTool runs one invocation of an admitted Tool module in a fresh
// instance and answers its receipt: result with the ToolOutput the Tool
// answered; failure timeout when its deadline passes and cancelled when
// ctx ends first (the instance is closed either way); failure tool_error
// for a trap, an exit, a panic or a returned error (or the code of the
// refused service call the error carries); output_limit for an answer over
// Options.MaxToolOutputBytes; overloaded when no instance slot is free.
// The contents of the secret files the invocation is granted are removed
// from the receipt, from what Options.Output is given and from the input
// of its service calls (hidden).
func (h *Host) RunTool(ctx context.Context, c ToolCall) (rc envapi.Receipt) {
	var deadlineMs int64
	if !c.Deadline.IsZero() {
		// The deadline also bounds finding the module, which may wait
		// for an admission or fetch it from the cluster's store.
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, c.Deadline, errDeadline)
		defer stop()
		deadlineMs = c.Deadline.UnixMilli()
	}
	m, err := h.toolModule(ctx, c.ID)
	if err != nil {
		return moduleFailure(ctx, c.ID, err)
	}
	release, err := h.acquire()
	if err != nil {
		return envapi.Failure(brainapi.CodeOverloaded, err.Error(), true, nil)
	}
	defer release()
	fsc, mnt, err := h.prepare(c.Grants)
	defer mnt.release()
	defer func() { rc = mnt.hide.receipt(rc) }()
	if err != nil {
		return envapi.Failure(envapi.CodeExecutionFailed, "tool "+short(c.ID)+": grants: "+err.Error(), false, nil)
	}
	if mnt.budget != nil {
		ctx = context.WithValue(ctx, budgetKey{}, mnt.budget)
	}
	ctx = context.WithValue(ctx, openFilesKey{}, mnt.files)
	in := c.Input
	if len(in) == 0 {
		in = json.RawMessage("null")
	}
	conf := c.Configuration
	if len(conf) == 0 {
		conf = json.RawMessage("null")
	}
	raw, err := json.Marshal(toolInvocation{Input: in, Configuration: conf, DeadlineAtMs: deadlineMs})
	if err != nil {
		return envapi.Failure(envapi.CodeInvalidInput, err.Error(), false, nil)
	}
	svc := c.Services
	if svc == nil {
		svc = noServices{}
	}
	a := &activation{tool: svc, limit: h.opts.MaxToolOutputBytes, hide: mnt.hide,
		stdout: newCapture(h.opts.MaxOutputBytes), stderr: newCapture(h.opts.MaxOutputBytes)}
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	if err := h.enter(a, func() { stopRun(ErrClosed) }); err != nil {
		return envapi.Failure(envapi.CodeUnavailable, "tool "+short(c.ID)+": "+err.Error(), true, nil)
	}
	defer h.leave(a)
	doc, err := h.instance(ctx, m, a, raw, fsc)
	if ctx.Err() != nil {
		// The deadline or a cancel came first: the stop is the answer,
		// also when the Tool answered after it (with the error of a
		// service call the stop cut short, say) before its instance was
		// closed.
		return stopped(ctx, c.ID)
	}
	if err != nil {
		var lim *limitError
		if errors.As(err, &lim) {
			return envapi.Failure(envapi.CodeOutputLimit, err.Error(), false, nil)
		}
		return envapi.Failure(brainapi.FailureToolError, err.Error(), false, nil)
	}
	return decodeRunAnswer(c.ID, doc, &a.errs, a.hide)
}

// stopped answers the invocation of Tool id that ctx stopped: timeout
// when its deadline passed, cancelled otherwise.
func stopped(ctx context.Context, id string) envapi.Receipt {
	if errors.Is(context.Cause(ctx), errDeadline) || errors.Is(context.Cause(ctx), session.ErrTimeout) {
		return envapi.Failure(envapi.CodeTimeout, "tool "+short(id)+" exceeded its deadline", false, nil)
	}
	return envapi.Failure(envapi.CodeCancelled, "tool "+short(id)+" was cancelled", false, nil)
}

// moduleFailure answers an execute of Tool id whose module could not be
// found or checked (err); nothing ran. ctx ended (its deadline passed, or
// it was cancelled, while the module was awaited): as stopped. The
// cluster's module store could not be read, or the module not stored
// here: overloaded, and a retry may find it. The host is closed:
// unavailable, as a provider that is stopping answers, and retryable. A
// grant the operator does not allow: execution_failed. Otherwise the
// implementation cannot run here: unsupported.
func moduleFailure(ctx context.Context, id string, err error) envapi.Receipt {
	switch {
	case ctx.Err() != nil && !errors.Is(err, ErrClosed):
		return stopped(ctx, id)
	case errors.Is(err, journal.ErrOverloaded), errors.Is(err, ErrStorage):
		return envapi.Failure(brainapi.CodeOverloaded, err.Error(), true, nil)
	case errors.Is(err, ErrClosed):
		return envapi.Failure(envapi.CodeUnavailable, err.Error(), true, nil)
	case errors.Is(err, ErrNotAllowed):
		return envapi.Failure(envapi.CodeExecutionFailed, err.Error(), false, nil)
	}
	return envapi.Failure(envapi.CodeUnsupported, err.Error(), false, nil)
}

// limitError is an answer over the output bound.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// instance runs one fresh instance of m: it writes raw through
// brain_alloc, calls the entrypoint and answers the bytes it answered. The
// instance is closed before instance returns.
func (h *Host) instance(ctx context.Context, m *module, a *activation, raw []byte, fsc wazero.FSConfig) (doc []byte, err error) {
	ctx = context.WithValue(ctx, activationKey{}, a)
	alloc, unmap := memoryAllocator()
	defer unmap()
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	// A Tool sees the real clock and unpredictable random bytes (a loop's
	// are its activation's logical time and deterministic seed). On the
	// real clock a sleep that returned at once would only be taken again
	// until its time had passed, spinning a core, so it waits for real,
	// and no longer than the invocation's context, so that neither the
	// deadline nor a cancel waits for it.
	cfg := h.base.WithStdout(a.stdout).WithStderr(a.stderr).WithRandSource(cryptorand.Reader).
		WithSysWalltime().WithSysNanotime().WithNanosleep(sleeper(ctx))
	if fsc != nil {
		cfg = cfg.WithFSConfig(fsc)
	}
	h.activations.Add(1)
	mod, err := h.rt.InstantiateModule(ctx, m.cm, cfg)
	if err != nil {
		return nil, a.fail(ctx, m, "instantiate", err)
	}
	defer func() {
		_ = mod.Close(context.WithoutCancel(ctx))
		if h.opts.Output != nil {
			h.opts.Output(m.id, a.hide.output(a.stdout), a.hide.output(a.stderr))
		}
	}()
	out, err := a.exchange(ctx, m, mod, tool.ExportRun, raw)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(out), nil
}

// sleeper answers the guest's sleep: it waits ns nanoseconds or until ctx
// ends.
func sleeper(ctx context.Context) func(ns int64) {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// toolCall runs one service call of a tool invocation.
func (a *activation) toolCall(ctx context.Context, method string, in []byte) (json.RawMessage, error) {
	if !kindTool.imports(method) {
		return nil, fmt.Errorf("%w: %q", session.ErrNotGranted, method)
	}
	if a.limit > 0 && len(in) > a.limit {
		return nil, fmt.Errorf("%w: %s input of %d bytes exceeds %d", session.ErrInvalid, method, len(in), a.limit)
	}
	out, err := a.tool.Call(ctx, method, a.hide.json(bytes.Clone(in)))
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	return out, nil
}

// noServices refuses every service call.
type noServices struct{}

func (noServices) Call(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("%w: %q", session.ErrNotGranted, method)
}

// invocations tracks running tool invocations by session and sequence, and
// remembers the last finished ones, so that a cancel names one the host
// ran.
type invocations struct {
	mu     sync.Mutex
	live   map[invocationKey]context.CancelCauseFunc
	recent map[invocationKey]bool
	order  []invocationKey
}

type invocationKey struct {
	session string
	seq     uint64
}

const recentInvocations = 4096

func newInvocations() *invocations {
	return &invocations{live: map[invocationKey]context.CancelCauseFunc{}, recent: map[invocationKey]bool{}}
}

func (v *invocations) start(k invocationKey, cancel context.CancelCauseFunc) {
	v.mu.Lock()
	v.live[k] = cancel
	v.mu.Unlock()
}

func (v *invocations) end(k invocationKey) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.live, k)
	if !v.recent[k] {
		v.recent[k] = true
		v.order = append(v.order, k)
		if len(v.order) > recentInvocations {
			delete(v.recent, v.order[0])
			v.order = v.order[1:]
		}
	}
}

// cancel stops a running invocation and reports whether the host ran or
// runs it.
func (v *invocations) cancel(k invocationKey, cause error) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if c := v.live[k]; c != nil {
		c(cause)
		return true
	}
	return v.recent[k]
}
