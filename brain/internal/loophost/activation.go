package loophost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/brain-in-go/brain/brain/agentloop"
	brainapi "github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/guestabi"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// serviceMethods are the service functions of the host module: the
// agentloop services and the Tool services.
var serviceMethods = []string{
	envapi.MethodModel, envapi.MethodDispatch, envapi.MethodEmit, envapi.MethodTelemetry,
	envapi.MethodEvents, envapi.MethodSetTranscript, envapi.MethodKVRead, envapi.MethodKVPut,
	envapi.MethodKVDelete, envapi.MethodEnvironments,
	envapi.MethodResult, envapi.MethodReturned, envapi.MethodFinish,
}

// kindMethods are the service functions each kind of module may import.
var kindMethods = map[kind]map[string]bool{
	kindLoop: methodSet(envapi.AgentloopMethods()),
	kindTool: methodSet(envapi.ToolMethods()),
}

func methodSet(ms []string) map[string]bool {
	set := map[string]bool{agentloop.HostAnswer: true}
	for _, m := range ms {
		set[m] = true
	}
	return set
}

// imports reports whether a module of kind k may import the host
// function name.
func (k kind) imports(name string) bool { return kindMethods[k][name] }

// hostSignatures are the parameter and result types of the host module's
// functions.
var hostSignatures = func() map[string][2][]api.ValueType {
	m := map[string][2][]api.ValueType{
		agentloop.HostAnswer: {{i32, i32}, {i32}},
	}
	for _, name := range serviceMethods {
		m[name] = [2][]api.ValueType{{i32, i32}, {i64}}
	}
	return m
}()

// Service answer status (the high 32 bits of a service function's result).
const (
	statusOK     = 0
	statusFailed = 1
)

// maxErrorMessage bounds the message of a failure answered to the guest,
// and what is recorded of the message of a guest's error answer.
const maxErrorMessage = guestabi.MaxMessage

// maxTurnAnswerBytes bounds the answer of turn, as
// Options.MaxToolOutputBytes bounds a Tool's by default: the result is
// committed in one turn_ended record, which the journal refuses past 64
// MiB.
const maxTurnAnswerBytes = DefaultMaxToolOutputBytes

// maxStderrInError bounds the stderr head added to a failed activation's
// error.
const maxStderrInError = 2048

// activationKey carries the running activation in the context the host
// functions receive.
type activationKey struct{}

// activation is the host side of one running activation.
type activation struct {
	svc     agentloop.Services
	tool    ToolServices // set for a tool invocation instead of svc
	limit   int          // bounds the entrypoint's answer and a tool's service inputs (0: none)
	pending []byte       // the answer of the last service call
	errs    refusals     // failed service calls, by ref
	stdout  *capture
	stderr  *capture
	hide    hidden // secrets removed from what is recorded (a Tool's grants)
}

func (h *Host) instantiateHostModule(ctx context.Context) error {
	b := h.rt.NewHostModuleBuilder(agentloop.HostModule)
	for _, name := range serviceMethods {
		b.NewFunctionBuilder().
			WithGoModuleFunction(serviceFunc(name), []api.ValueType{i32, i32}, []api.ValueType{i64}).
			WithParameterNames("ptr", "len").
			Export(name)
	}
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(answerFunc), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "len").
		Export(agentloop.HostAnswer)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("loophost: host module: %w", err)
	}
	return nil
}

// serviceFunc is the host function of one service method.
func serviceFunc(method string) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		a, _ := ctx.Value(activationKey{}).(*activation)
		if a == nil {
			panic(fmt.Errorf("brain.%s called outside an activation", method))
		}
		in, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
		if !ok {
			panic(fmt.Errorf("brain.%s: input %d+%d is outside guest memory", method, uint32(stack[0]), uint32(stack[1])))
		}
		out, err := a.call(ctx, method, in)
		status := uint64(statusOK)
		if err != nil {
			out = hostError(err, a.errs.add(err))
			status = statusFailed
		}
		a.pending = out
		stack[0] = status<<32 | uint64(uint32(len(out)))
	}
}

// answerFunc copies the pending answer into guest memory.
func answerFunc(ctx context.Context, mod api.Module, stack []uint64) {
	a, _ := ctx.Value(activationKey{}).(*activation)
	if a == nil {
		panic(errors.New("brain.answer called outside an activation"))
	}
	ptr, n := uint32(stack[0]), uint32(stack[1])
	out := a.pending
	if uint32(len(out)) < n {
		n = uint32(len(out))
	}
	if !mod.Memory().Write(ptr, out[:n]) {
		panic(fmt.Errorf("brain.answer: %d+%d is outside guest memory", ptr, n))
	}
	a.pending = nil
	stack[0] = uint64(n)
}

// hostError encodes a failed service call for the guest.
func hostError(err error, ref uint32) []byte {
	e := session.APIError(err)
	msg := clip(e.Message, maxErrorMessage)
	b, merr := json.Marshal(agentloop.HostError{Code: e.Code, Message: msg, Retryable: e.Retryable, Details: e.Details, Ref: ref})
	if merr != nil {
		b, _ = json.Marshal(agentloop.HostError{Code: brainapi.CodeInternal, Message: merr.Error(), Ref: ref})
	}
	return b
}

// call runs one service call: the same inputs and outputs as the callback
// API's ExecutionCall.
func (a *activation) call(ctx context.Context, method string, in []byte) (json.RawMessage, error) {
	if len(in) == 0 {
		in = []byte("null")
	}
	if !utf8.Valid(in) {
		// encoding/json would take the bytes into raw values as they are,
		// and the journal would keep JSON no client can read.
		return nil, fmt.Errorf("%w: %s input is not valid UTF-8", session.ErrInvalid, method)
	}
	if a.tool != nil {
		return a.toolCall(ctx, method, in)
	}
	decode := func(v any) error { return session.DecodeInput(method, in, v) }
	seqOut := func(seq uint64, err error) (json.RawMessage, error) {
		if err != nil {
			return nil, err
		}
		return json.Marshal(seq)
	}
	svc := a.svc
	switch method {
	case envapi.MethodModel:
		var req brainapi.ModelRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		res, err := svc.Model(ctx, req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	case envapi.MethodDispatch:
		var calls []brainapi.ToolInvocation
		if err := decode(&calls); err != nil {
			return nil, err
		}
		out, err := svc.Dispatch(ctx, calls)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = []brainapi.ToolReturn{}
		}
		return json.Marshal(out)
	case envapi.MethodEmit:
		var e brainapi.EmitInput
		if err := decode(&e); err != nil {
			return nil, err
		}
		return seqOut(svc.Emit(ctx, e.EventType, e.Data))
	case envapi.MethodTelemetry:
		if err := svc.Telemetry(ctx, bytes.Clone(in)); err != nil {
			return nil, err
		}
		return json.RawMessage("null"), nil
	case envapi.MethodEvents:
		var after uint64
		if err := decode(&after); err != nil {
			return nil, err
		}
		page, err := svc.Events(ctx, after)
		if err != nil {
			return nil, err
		}
		return json.Marshal(page)
	case envapi.MethodSetTranscript:
		var msgs []brainapi.Message
		if err := decode(&msgs); err != nil {
			return nil, err
		}
		return seqOut(svc.SetTranscript(ctx, msgs))
	case envapi.MethodKVRead:
		var key string
		if err := decode(&key); err != nil {
			return nil, err
		}
		v, ok, err := svc.KVRead(ctx, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			return json.RawMessage("{}"), nil
		}
		if v == nil {
			v = json.RawMessage("null")
		}
		return json.Marshal(brainapi.KVReadResult{Value: v})
	case envapi.MethodKVPut:
		var p brainapi.KVPutInput
		if err := decode(&p); err != nil {
			return nil, err
		}
		return seqOut(svc.KVPut(ctx, p.Key, p.Value))
	case envapi.MethodKVDelete:
		var key string
		if err := decode(&key); err != nil {
			return nil, err
		}
		return seqOut(svc.KVDelete(ctx, key))
	case envapi.MethodEnvironments:
		out, err := svc.Environments(ctx, bytes.Clone(in))
		if err != nil {
			return nil, err
		}
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: %q", session.ErrUnknownMethod, method)
}

// GuestError is the error of an activation whose guest reported a failure.
// Err is the service call error the guest returned (by ref), if any, so
// that errors.Is and errors.As see the engine's error.
type GuestError struct {
	Message string
	Err     error
}

func (e *GuestError) Error() string { return e.Message }

func (e *GuestError) Unwrap() error { return e.Err }

// run is one activation of m: a fresh instance, one turn, closed.
func (h *Host) run(ctx context.Context, m *module, svc agentloop.Services, in brainapi.TurnInput) (out brainapi.TurnOutput, err error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return out, fmt.Errorf("agentloop %s: turn input: %w", short(m.id), err)
	}
	release, err := h.acquire()
	if err != nil {
		return out, &session.TurnError{Code: brainapi.CodeOverloaded, Message: err.Error(), Retryable: true, Err: err}
	}
	defer release()
	a := &activation{svc: svc, limit: maxTurnAnswerBytes,
		stdout: newCapture(h.opts.MaxOutputBytes), stderr: newCapture(h.opts.MaxOutputBytes)}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if err := h.enter(a, func() { stop(ErrClosed) }); err != nil {
		return out, closedTurn(kindLoop, m.id, err)
	}
	defer h.leave(a)
	defer func() {
		if err != nil && errors.Is(context.Cause(ctx), ErrClosed) {
			err = closedTurn(kindLoop, m.id, err)
		}
	}()
	ctx = context.WithValue(ctx, activationKey{}, a)
	alloc, unmap := memoryAllocator()
	defer unmap() // after the instance is closed (deferred below)
	ctx = experimental.WithMemoryAllocator(ctx, alloc)
	var seed [32]byte
	copy(seed[:], in.Runtime.DeterministicSeed)
	cfg := h.base.WithStdout(a.stdout).WithStderr(a.stderr).WithRandSource(rand.NewChaCha8(seed))
	h.activations.Add(1)
	mod, err := h.rt.InstantiateModule(ctx, m.cm, cfg)
	if err != nil {
		return out, a.fail(ctx, m, "instantiate", err)
	}
	defer func() {
		_ = mod.Close(context.WithoutCancel(ctx))
		if h.opts.Output != nil {
			h.opts.Output(m.id, a.stdout.Bytes(), a.stderr.Bytes())
		}
	}()
	doc, err := a.exchange(ctx, m, mod, agentloop.ExportTurn, raw)
	if err != nil {
		return out, err
	}
	return decodeTurnAnswer(m.id, doc, &a.errs)
}

// closedTurn is the error of an activation of agentloop id that Close
// refused or stopped, or of a module id of kind k that could not be
// looked up because the host is closed (err wraps ErrClosed): the server
// is stopping, and the turn may be taken again once it is back, as when
// every instance slot is taken.
func closedTurn(k kind, id string, err error) error {
	return &session.TurnError{Code: brainapi.CodeOverloaded, Retryable: true, Err: err,
		Message: fmt.Sprintf("%s %s: the host is closed: the server is stopping", k, short(id))}
}

// storageTurn is the failure of naming module id of kind k while its
// module could not be read, stored or compiled for a storage failure
// (err): the module is not at fault, and the same name may resolve later.
func storageTurn(k kind, id string, err error) error {
	return &session.TurnError{Code: brainapi.CodeOverloaded, Retryable: true, Err: err,
		Message: fmt.Sprintf("%s %s: the module could not be loaded: %v", k, short(id), err)}
}

// fail describes an instance that trapped, exited or was closed.
// exchange writes raw into the buffer the instance's brain_alloc hands
// out, calls export with it, and answers the bytes at the pointer and
// length export answers; they are valid until the instance is closed. An
// answer beyond a.limit (when set) fails with a limitError.
func (a *activation) exchange(ctx context.Context, m *module, mod api.Module, export string, raw []byte) ([]byte, error) {
	res, err := mod.ExportedFunction(agentloop.ExportAlloc).Call(ctx, uint64(len(raw)))
	if err != nil {
		return nil, a.fail(ctx, m, agentloop.ExportAlloc, err)
	}
	ptr := uint32(res[0])
	if !mod.Memory().Write(ptr, raw) {
		return nil, fmt.Errorf("%s %s: %s answered %d, outside memory for %d bytes", m.kind, short(m.id), agentloop.ExportAlloc, ptr, len(raw))
	}
	res, err = mod.ExportedFunction(export).Call(ctx, uint64(ptr), uint64(len(raw)))
	if err != nil {
		return nil, a.fail(ctx, m, export, err)
	}
	optr, olen := uint32(res[0]>>32), uint32(res[0])
	if a.limit > 0 && int(olen) > a.limit {
		return nil, &limitError{fmt.Sprintf("%s %s answered %d bytes (limit %d)", m.kind, short(m.id), olen, a.limit)}
	}
	out, ok := mod.Memory().Read(optr, olen)
	if !ok {
		return nil, fmt.Errorf("%s %s: %s answered %d+%d, outside memory", m.kind, short(m.id), export, optr, olen)
	}
	return out, nil
}

func (a *activation) fail(ctx context.Context, m *module, stage string, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return fmt.Errorf("%s %s: %s: %w", m.kind, short(m.id), stage, cause)
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		msg = fmt.Sprintf("exited with code %d", exit.ExitCode())
	}
	// The head is cut between characters, and a Tool's secrets are
	// removed before the cut, so that none is left in part.
	if s := strings.TrimSpace(a.hide.clip(string(a.stderr.Bytes()), maxStderrInError, a.stderr.dropped > 0)); s != "" {
		msg += "; stderr: " + s
	}
	return &TrapError{Message: fmt.Sprintf("%s %s: %s: %s", m.kind, short(m.id), stage, msg), Err: err}
}

// TrapError is the error of an activation whose instance trapped, exited
// or failed to instantiate. Message carries the first line of the
// runtime's error (or the exit code) and the head of the guest's stderr;
// Err is the runtime's error with its Wasm stack trace.
type TrapError struct {
	Message string
	Err     error
}

func (e *TrapError) Error() string { return e.Message }

func (e *TrapError) Unwrap() error { return e.Err }

// clip answers the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// capture keeps the first max bytes written to it.
type capture struct {
	buf     []byte
	max     int
	dropped int64
}

func newCapture(max int) *capture { return &capture{max: max} }

func (c *capture) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	if room > len(p) {
		room = len(p)
	}
	c.buf = append(c.buf, p[:room]...)
	c.dropped += int64(len(p) - room)
	return len(p), nil
}

// Bytes answers the captured bytes.
func (c *capture) Bytes() []byte { return c.buf }

// enter registers an activation so that Close can stop it and wait for it;
// it fails once the host is closed.
func (h *Host) enter(a *activation, stop context.CancelFunc) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrClosed
	}
	if h.stops == nil {
		h.stops = map[*activation]context.CancelFunc{}
	}
	h.stops[a] = stop
	h.running.Add(1)
	return nil
}

// leave ends what enter began.
func (h *Host) leave(a *activation) {
	h.mu.Lock()
	delete(h.stops, a)
	h.mu.Unlock()
	h.running.Done()
}
