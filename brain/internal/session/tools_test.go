package session

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func twoCalls() string {
	return script(map[string]any{"tool_calls": []map[string]any{
		{"name": "echo", "input": map[string]int{"n": 1}},
		{"name": "echo", "input": map[string]int{"n": 2}},
	}})
}

func TestToolTurn(t *testing.T) {
	h := newHarness(t, Config{Limits: DefaultLimits()}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	recs := h.records(id)
	if got := kinds(recs); !reflect.DeepEqual(got, []string{"session_creation_started", "environment_setup_started", "environment_setup_ended", "session_creation_ended"}) {
		t.Fatalf("creation records = %v", got)
	}
	setup := h.envs.opsOf(envapi.RequestSetup)
	if len(setup) != 1 || setup[0].Sequence != 2 || setup[0].Binding.Sequence != 1 {
		t.Fatalf("setup ops = %+v", setup)
	}
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: twoCalls()}); err != nil {
		t.Fatal(err)
	}
	recs = h.records(id)
	started := ofKind(recs, api.KindToolCallStarted)
	ended := ofKind(recs, api.KindToolCallEnded)
	if len(started) != 2 || len(ended) != 2 || len(ofKind(recs, api.KindModelCallStarted)) != 2 {
		t.Fatalf("records = %v", kinds(recs))
	}
	execs := h.envs.opsOf(envapi.RequestExecute)
	if len(execs) != 2 {
		t.Fatalf("%d executes", len(execs))
	}
	for _, op := range execs {
		if op.Request.DeadlineMs == nil || *op.Request.DeadlineMs != 120000 || !op.Request.Callback.Allows("finish") {
			t.Fatalf("execute request = %+v", op.Request)
		}
	}
	seen := map[uint64]string{}
	for _, r := range ended {
		e := decode[api.ToolCallEnded](t, r.Data)
		if e.IsError || e.Outcome.Status != api.OutcomeOK {
			t.Fatalf("tool_call_ended = %+v", e)
		}
		seen[e.Sequence] = string(e.Outcome.Value)
	}
	for i, r := range started {
		want := []string{`{"n":1}`, `{"n":2}`}[i]
		if seen[r.Sequence] != want {
			t.Fatalf("call %d outcome %q, want %q", r.Sequence, seen[r.Sequence], want)
		}
	}
	tr, _ := h.engine.Transcript(context.Background(), id)
	if len(tr.Messages) != 4 || tr.Messages[1].Content[0].Type != api.BlockToolUse ||
		tr.Messages[2].Content[1].ToolUseID != "call_2" || tr.Messages[3].Text() != `[{"n":1},{"n":2}]` {
		t.Fatalf("transcript = %+v", tr.Messages)
	}
}

func TestToolFailureReceiptReachesResultUnchanged(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "refuse"})
	id := h.create(toolSession("refuse"))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	e := decode[api.ToolCallEnded](t, ofKind(h.records(id), api.KindToolCallEnded)[0].Data)
	if !e.IsError || e.Outcome.Status != "error" || e.Outcome.Error.Code != "unsupported" || e.Outcome.Error.Message != "m" ||
		!e.Outcome.Error.Retryable || string(e.Outcome.Error.Details) != `{"x":1}` {
		t.Fatalf("outcome = %+v", e)
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 1 {
		t.Fatalf("%d executes (retried?)", n)
	}
}

// A failure receipt with code timeout or cancelled closes the call with
// that bare outcome, and its message, retryable flag and details reach the
// tool's terminal record unchanged beside it.
func TestStopReceiptKeepsItsEvidence(t *testing.T) {
	for _, c := range []struct {
		behaviour string
		status    string
		want      api.Failure
	}{
		{"selftimeout", api.OutcomeTimeout, api.Failure{Code: envapi.CodeTimeout, Message: "deadline expired", Details: json.RawMessage(`{"cleanup_error":"pid 7 survived"}`)}},
		{"selfcancel", api.OutcomeCancelled, api.Failure{Code: envapi.CodeCancelled, Message: "cancelled by the operator", Retryable: true}},
	} {
		t.Run(c.behaviour, func(t *testing.T) {
			h := newHarness(t, Config{}, map[string]string{"box": c.behaviour})
			id := h.create(toolSession(c.behaviour))
			if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
				t.Fatal(err)
			}
			e := decode[api.ToolCallEnded](t, ofKind(h.records(id), api.KindToolCallEnded)[0].Data)
			if !e.IsError || e.Outcome.Status != c.status || e.Outcome.Error != nil || e.Failure == nil || !reflect.DeepEqual(*e.Failure, c.want) {
				t.Fatalf("tool_call_ended = %+v (failure %+v), want outcome %s and failure %+v", e, e.Failure, c.status, c.want)
			}
			if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 1 {
				t.Fatalf("%d executes", n)
			}
		})
	}
}

func TestUnreachableEnvironmentGivesUnknown(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("x"))
	h.envs.mu.Lock()
	h.envs.behaviour["box"] = "fail"
	h.envs.mu.Unlock()
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	e := decode[api.ToolCallEnded](t, ofKind(recs, api.KindToolCallEnded)[0].Data)
	if e.Outcome.Status != api.OutcomeUnknown || !e.IsError || len(ofKind(recs, api.KindEnvironmentUnreachable)) != 1 {
		t.Fatalf("outcome %+v, records %v", e, kinds(recs))
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 1 {
		t.Fatalf("%d executes", n)
	}
}

func TestFailedSetupFailsCreation(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "fail"})
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "m"}
	sum, err := h.engine.Create(context.Background(), "", req)
	if err != nil {
		t.Fatal(err)
	}
	recs := h.records(sum.SessionID)
	if sum.Status != api.StatusFailed || len(ofKind(recs, api.KindEnvironmentUnreachable)) != 1 ||
		recs[len(recs)-1].Kind != api.KindSessionCreationFailed {
		t.Fatalf("summary %+v, records %v", sum, kinds(recs))
	}
	// A failed session may be deleted.
	if err := h.engine.Delete(context.Background(), sum.SessionID); err == nil {
		t.Log("deleted")
	}
}

func TestManualEnvironmentNotReady(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Environments[0].Lifecycle = api.LifecycleManual
	id := h.create(req)
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	e := decode[api.ToolCallEnded](t, ofKind(h.records(id), api.KindToolCallEnded)[0].Data)
	if e.Outcome.Error == nil || e.Outcome.Error.Code != api.FailureEnvironmentNotReady {
		t.Fatalf("outcome = %+v", e.Outcome)
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)) + len(h.envs.opsOf(envapi.RequestSetup)); n != 0 {
		t.Fatalf("%d operations sent", n)
	}
}

func TestToolEmitOriginCannotBeSpoofed(t *testing.T) {
	h := newHarness(t, Config{Limits: DefaultLimits()}, map[string]string{"box": "emitter"})
	id := h.create(toolSession("emitter"))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	page, _ := h.engine.Events(context.Background(), id, 0)
	var progress *api.Event
	for i := range page.Events {
		if page.Events[i].EventType == "progress" {
			progress = &page.Events[i]
		}
	}
	toolSeq := ofKind(h.records(id), api.KindToolCallStarted)[0].Sequence
	if progress == nil || progress.Origin == nil || progress.Origin.Kind != api.OriginTool || progress.Origin.Sequence != toolSeq {
		t.Fatalf("progress event = %+v", progress)
	}
	for _, ev := range page.Events {
		if ev.EventType != "progress" && ev.Origin != nil {
			t.Fatalf("kernel record %s has origin", ev.EventType)
		}
	}
}

// TestBackgroundToolWakesLoop: a tool that returns without finishing
// survives the turn; its later finish commits tool_call_ended and starts an
// event-triggered activation with no turn records.
func TestBackgroundToolWakesLoop(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	toolSeq := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	if len(ofKind(recs, api.KindToolCallReturned)) != 1 || len(ofKind(recs, api.KindToolCallEnded)) != 0 {
		t.Fatalf("records = %v", kinds(recs))
	}
	tr, _ := h.engine.Transcript(ctx, id)
	if !strings.Contains(string(tr.Messages[2].Content[0].Content), `"pending"`) {
		t.Fatalf("tool_result = %s", tr.Messages[2].Content[0].Content)
	}
	if h.engine.Active() != 1 {
		t.Fatalf("a session with an open tool was passivated")
	}
	svc, err := h.engine.Execution(id, toolSeq)
	if err != nil {
		t.Fatal(err)
	}
	last := uint64(len(recs))
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"late"`)}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatal(err)
	}
	// Finish closed emission authority.
	if _, err := svc.Emit(ctx, "after", nil); !errors.Is(err, ErrExecutionClosed) {
		t.Fatalf("emit after finish: %v", err)
	}
	ev := h.waitEvent(id, last, api.KindActivationEnded)
	recs = h.records(id)
	tail := kinds(recs[last:ev.Sequence])
	want := []string{"tool_call_ended", "activation_started", "model_call_started", "model_call_ended", "transcript_delta", "activation_ended"}
	if !reflect.DeepEqual(tail, want) {
		t.Fatalf("wake records = %v, want %v", tail, want)
	}
	as := decode[activationStarted](t, recs[last+1].Data)
	if as.Trigger != "events" || as.Sequence != 0 || len(as.Events) != 1 || as.Events[0] != last+1 {
		t.Fatalf("activation_started = %+v", as)
	}
	if sum, _ := h.engine.Summary(ctx, id); sum.Status != api.StatusIdle {
		t.Fatalf("status %s", sum.Status)
	}
	_ = toolSeq
}

func TestDispatchFromCustomLoopViaCall(t *testing.T) {
	loops := map[string]agentloop.Func{"call": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		out, err := svc.(Services).Call(ctx, "dispatch", json.RawMessage(`[{"call_id":"a","name":"echo","environment":"box","input":{"v":7}}]`))
		if err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{Result: out}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("call")
	id := h.create(req)
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	te := decode[turnEnded](t, ofKind(h.records(id), api.KindTurnEnded)[0].Data)
	returns := decode[[]api.ToolReturn](t, te.Result)
	if len(returns) != 1 || !returns[0].Finished || returns[0].CallID != "a" || len(returns[0].Events) != 1 ||
		returns[0].Events[0].EventType != api.KindToolCallEnded {
		t.Fatalf("returns = %+v", returns)
	}
	_ = time.Second
}

func TestEnvironmentReportWakesLoop(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	// A diagnostic does not wake the loop.
	diag, err := h.engine.Report(ctx, id, binding, Report{Type: ReportEvent, EventType: "disk", Data: json.RawMessage(`{"free":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.Report(ctx, id, api.EnvironmentRef{Name: "box", Sequence: 9}, Report{Type: ReportEvent, EventType: "x"}); !errors.Is(err, ErrExecutionClosed) {
		t.Fatalf("stale binding: %v", err)
	}
	seq := h.reportLost(id, binding)
	h.waitEvent(id, seq, api.KindActivationEnded)
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindActivationStarted)); n != 1 {
		t.Fatalf("%d activations: %v", n, kinds(recs))
	}
	as := decode[activationStarted](t, ofKind(recs, api.KindActivationStarted)[0].Data)
	if as.Trigger != "events" || len(as.Events) != 1 || as.Events[0] != seq {
		t.Fatalf("activation_started = %+v (diag %d)", as, diag)
	}
	page, _ := h.engine.Events(ctx, id, 0)
	for _, ev := range page.Events {
		if ev.Sequence == diag && (ev.EventType != "disk" || ev.Origin == nil || ev.Origin.Environment == nil || *ev.Origin.Environment != binding) {
			t.Fatalf("diagnostic event = %+v", ev)
		}
	}
}
