package loophost_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentlooptest"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/loophost"
	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// toolModule is the test Tool (testdata/tool), built once per test binary.
func toolModule(t testing.TB) []byte {
	t.Helper()
	return agentlooptest.Build(t, "testdata/tool")
}

func toolHost(t testing.TB, opts loophost.Options) (*loophost.Host, string) {
	t.Helper()
	if opts.ToolsDir == "" {
		opts.ToolsDir = t.TempDir()
	}
	h := openHost(t, opts)
	a, err := h.AdmitTool(context.Background(), toolModule(t))
	if err != nil || a.Status != loophost.StatusAdmitted {
		t.Fatalf("admit tool: %+v %v", a, err)
	}
	return h, a.ID
}

// toolServices records the service calls of a tool.
type toolServices struct {
	mu    sync.Mutex
	calls []string
}

func (s *toolServices) Call(_ context.Context, method string, input json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, method+" "+string(input))
	if method == envapi.MethodEmit && strings.Contains(string(input), `"tool_call_ended"`) {
		return nil, fmt.Errorf("%w: tool_call_ended", session.ErrReservedName)
	}
	return json.RawMessage(fmt.Sprint(len(s.calls))), nil
}

func runOp(t testing.TB, h *loophost.Host, id string, c loophost.ToolCall, in string) envapi.Receipt {
	t.Helper()
	c.ID, c.Input = id, json.RawMessage(in)
	return h.RunTool(context.Background(), c)
}

func okValue(t testing.TB, r envapi.Receipt) string {
	t.Helper()
	if r.Type != envapi.ReceiptResult {
		t.Fatalf("receipt %+v", r)
	}
	o, err := envapi.DecodeOutcome(r.Output)
	if err != nil || o.Status != envapi.StatusOK {
		t.Fatalf("outcome %s: %v", r.Output, err)
	}
	return string(o.Value)
}

func failure(t testing.TB, r envapi.Receipt, code string) {
	t.Helper()
	if r.Type != envapi.ReceiptFailure || r.Code != code {
		t.Fatalf("receipt %+v, want failure %s", r, code)
	}
}

// A Tool module is admitted by its SHA-256, compiled once, survives a
// reopen, and is kept apart from agentloop modules in both directions.
func TestToolAdmission(t *testing.T) {
	dir, tools := t.TempDir(), t.TempDir()
	h, id := toolHost(t, loophost.Options{Dir: dir, ToolsDir: tools})
	if id != sha(toolModule(t)) {
		t.Fatalf("id %s", id)
	}
	compiles := h.Compiles()
	if a, err := h.AdmitTool(context.Background(), toolModule(t)); err != nil || a.ID != id || a.Status != loophost.StatusAdmitted {
		t.Fatalf("readmit: %+v %v", a, err)
	}
	if h.Compiles() != compiles {
		t.Fatal("readmission compiled again")
	}
	if _, ok := h.Admission(id); ok {
		t.Fatal("a tool module is known as an agentloop")
	}
	// An agentloop module is rejected as a Tool and a Tool as an agentloop.
	a, err := h.AdmitTool(context.Background(), guest)
	if err != nil || a.Status != loophost.StatusRejected || !strings.Contains(a.Error.Message, "it is an agentloop module") {
		t.Fatalf("agentloop as tool: %+v %v", a, err)
	}
	a, err = h.Admit(context.Background(), toolModule(t))
	if err != nil || a.Status != loophost.StatusRejected || !strings.Contains(a.Error.Message, "it is a Tool module") {
		t.Fatalf("tool as agentloop: %+v %v", a, err)
	}
	if _, err := os.Stat(filepath.Join(tools, id+".wasm")); err != nil {
		t.Fatal(err)
	}
	_ = h.Close(context.Background())
	h2 := openHost(t, loophost.Options{Dir: dir, ToolsDir: tools})
	if a, ok := h2.ToolAdmission(id); !ok || a.Status != loophost.StatusAdmitted {
		t.Fatalf("after reopen: %+v %v", a, ok)
	}
	if a, ok := h2.ToolAdmission(sha(guest)); !ok || a.Status != loophost.StatusRejected {
		t.Fatalf("rejection after reopen: %+v %v", a, ok)
	}
	if r := runOp(t, h2, id, loophost.ToolCall{}, `{"op":"echo","x":1}`); okValue(t, r) != `{"op":"echo","x":1}` {
		t.Fatalf("echo %s", r.Output)
	}
}

// Each invocation runs in a fresh instance; the Tool reaches its services
// through the host functions, and its errors keep their codes.
func TestToolRuns(t *testing.T) {
	h, id := toolHost(t, loophost.Options{})
	svc := &toolServices{}
	c := loophost.ToolCall{Services: svc, Configuration: json.RawMessage(`{"k":"v"}`), Deadline: time.Now().Add(time.Minute)}
	var inv struct {
		Configuration json.RawMessage `json:"configuration"`
		DeadlineAtMs  int64           `json:"deadline_at_ms"`
	}
	if err := json.Unmarshal([]byte(okValue(t, runOp(t, h, id, c, `{"op":"invocation"}`))), &inv); err != nil {
		t.Fatal(err)
	}
	if string(inv.Configuration) != `{"k":"v"}` || inv.DeadlineAtMs != c.Deadline.UnixMilli() {
		t.Fatalf("invocation %+v", inv)
	}
	before := h.Activations()
	if v := okValue(t, runOp(t, h, id, c, `{"op":"emit"}`)); v != "1" {
		t.Fatalf("emit answered %s", v)
	}
	if h.Activations() != before+1 {
		t.Fatal("not a fresh instance")
	}
	if len(svc.calls) != 1 || svc.calls[0] != `emit {"event_type":"test.note","data":{"n":1}}` {
		t.Fatalf("calls %q", svc.calls)
	}
	failure(t, runOp(t, h, id, c, `{"op":"forbidden"}`), api.CodeReservedName)
	failure(t, runOp(t, h, id, c, `{"op":"fail"}`), api.FailureToolError)
	failure(t, runOp(t, h, id, c, `{"op":"panic"}`), api.FailureToolError)
	// Without services every call is refused.
	failure(t, runOp(t, h, id, loophost.ToolCall{}, `{"op":"emit"}`), api.CodeNotGranted)
	// A malformed outcome reaches the engine, which reads it as
	// invalid_output.
	if r := runOp(t, h, id, c, `{"op":"bad"}`); r.Type != envapi.ReceiptResult || !strings.Contains(string(r.Output), "weird") {
		t.Fatalf("bad outcome %+v", r)
	}
}

// A guest that traps, exits, deadlocks or exhausts its memory fails with
// tool_error; one that loops forever is stopped by its deadline (timeout)
// or by a cancel (cancelled); an oversize answer fails with output_limit.
func TestToolFailures(t *testing.T) {
	h, id := toolHost(t, loophost.Options{MaxLinearMemoryBytes: 64 << 20, MaxToolOutputBytes: 1 << 16})
	for _, op := range []string{"exit", "deadlock", "grow"} {
		r := runOp(t, h, id, loophost.ToolCall{}, `{"op":"`+op+`"}`)
		failure(t, r, api.FailureToolError)
	}
	start := time.Now()
	failure(t, runOp(t, h, id, loophost.ToolCall{Deadline: time.Now().Add(300 * time.Millisecond)}, `{"op":"loop"}`), envapi.CodeTimeout)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the deadline stopped the loop after %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r := h.RunTool(ctx, loophost.ToolCall{ID: id, Input: json.RawMessage(`{"op":"loop"}`)})
	failure(t, r, envapi.CodeCancelled)
	failure(t, runOp(t, h, id, loophost.ToolCall{}, `{"op":"large","bytes":100000}`), envapi.CodeOutputLimit)
	if v := okValue(t, runOp(t, h, id, loophost.ToolCall{}, `{"op":"large","bytes":1000}`)); len(v) != 1002 {
		t.Fatalf("small answer %d bytes", len(v))
	}
	if h.Instances() != 0 {
		t.Fatalf("%d instances left", h.Instances())
	}
}

// The instance cap is shared by tool invocations and agentloop
// activations; one more fails at once with overloaded.
func TestInstanceCap(t *testing.T) {
	h, id := toolHost(t, loophost.Options{MaxInstances: 2})
	loopID := admit(t, h, guest)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.RunTool(ctx, loophost.ToolCall{ID: id, Input: json.RawMessage(`{"op":"loop"}`)})
		}()
	}
	deadline := time.Now().Add(time.Minute)
	for h.Instances() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the invocations did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := runOp(t, h, id, loophost.ToolCall{}, `{"op":"echo"}`)
	failure(t, r, api.CodeOverloaded)
	if !r.Retryable || !strings.Contains(r.Message, "BRAIN_MAX_CORE_INSTANCES") {
		t.Fatalf("saturation %+v", r)
	}
	f, err := h.Func(context.Background(), loopID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f(context.Background(), newFake(), input("hello"))
	if session.Code(err) != api.CodeOverloaded {
		t.Fatalf("agentloop at the cap: %v (%s)", err, session.Code(err))
	}
	cancel()
	wg.Wait()
	if h.Instances() != 0 {
		t.Fatalf("%d instances left", h.Instances())
	}
	okValue(t, runOp(t, h, id, loophost.ToolCall{}, `{"op":"echo"}`))
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// A Tool's random bytes differ from one invocation to the next, the same
// input or not (they were seeded by the invocation's first bytes), and its
// clock is the real one.
func TestToolRandomnessAndClock(t *testing.T) {
	h, id := toolHost(t, loophost.Options{})
	c := loophost.ToolCall{Services: &toolServices{}, Deadline: time.Now().Add(time.Minute)}
	a, b := okValue(t, runOp(t, h, id, c, `{"op":"random"}`)), okValue(t, runOp(t, h, id, c, `{"op":"random"}`))
	if a == b {
		t.Fatalf("two invocations with the same input got the same random bytes %s", a)
	}
	before := time.Now().UnixMilli()
	now, err := strconv.ParseInt(okValue(t, runOp(t, h, id, c, `{"op":"now"}`)), 10, 64)
	if after := time.Now().UnixMilli(); err != nil || now < before || now > after {
		t.Fatalf("the Tool's clock read %d (%v), want between %d and %d", now, err, before, after)
	}
}

// A Tool that returns a service call's error wrapped with a message longer
// than the host takes of an answer fails with that call's code and the
// head of its own message, not with output_limit.
func TestLongToolFailureKeepsItsCode(t *testing.T) {
	h, id := toolHost(t, loophost.Options{MaxToolOutputBytes: 1 << 16})
	r := runOp(t, h, id, loophost.ToolCall{Services: &toolServices{}}, `{"op":"fail-long","bytes":100000}`)
	if r.Type != envapi.ReceiptFailure || r.Code != api.CodeReservedName || !strings.HasPrefix(r.Message, "giving up xxxx") || len(r.Message) > 4096 {
		t.Fatalf("receipt %s %s with a message of %d bytes starting %.40q, want failure %s with at most 4096 bytes of the Tool's message",
			r.Type, r.Code, len(r.Message), r.Message, api.CodeReservedName)
	}
}

// blockingServices holds every service call until its context ends, and
// then fails it with the context's error, as a service call cut short by
// the invocation's stop does.
type blockingServices struct{}

func (blockingServices) Call(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("emit: %w", ctx.Err())
}

// A Tool whose service call was cut short by its deadline or a cancel, and
// that returns that call's error, fails with timeout or cancelled: the
// stop is the answer, not the failed call's code, also when the Tool's
// answer comes before its instance is closed.
func TestToolStoppedDuringAServiceCall(t *testing.T) {
	h, id := toolHost(t, loophost.Options{})
	r := runOp(t, h, id, loophost.ToolCall{Services: blockingServices{}, Deadline: time.Now().Add(300 * time.Millisecond)}, `{"op":"emit"}`)
	failure(t, r, envapi.CodeTimeout)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r = h.RunTool(ctx, loophost.ToolCall{ID: id, Services: blockingServices{}, Input: json.RawMessage(`{"op":"emit"}`)})
	failure(t, r, envapi.CodeCancelled)
}
