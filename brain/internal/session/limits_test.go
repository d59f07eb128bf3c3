package session

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func TestMaxModelCalls(t *testing.T) {
	h := newHarness(t, Config{Limits: Limits{MaxModelCalls: 1}}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.CodeModelCallLimit || Code(err) != api.CodeModelCallLimit {
		t.Fatalf("err = %v", err)
	}
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindModelCallStarted)); n != 1 {
		t.Fatalf("%d model_call_started", n)
	}
	f := decode[api.Failure](t, ofKind(recs, api.KindTurnFailed)[0].Data)
	if f.Code != api.FailureModelCallLimit {
		t.Fatalf("turn_failed = %+v", f)
	}
	// The budget is per turn: the next turn may call the model again.
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
}

func TestMaxToolSecsTimesOut(t *testing.T) {
	h := newHarness(t, Config{Limits: Limits{MaxTool: 150 * time.Millisecond}}, map[string]string{"box": "hang"})
	id := h.create(toolSession("hang"))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	e := decode[api.ToolCallEnded](t, ofKind(recs, api.KindToolCallEnded)[0].Data)
	if e.Outcome.Status != api.OutcomeTimeout || !e.IsError {
		t.Fatalf("outcome = %+v", e)
	}
	execs := h.envs.opsOf(envapi.RequestExecute)
	if len(execs) != 1 || *execs[0].Request.DeadlineMs > 150 {
		t.Fatalf("executes = %+v", execs)
	}
	if n := len(h.envs.opsOf(envapi.RequestCancel)); n != 0 {
		t.Fatalf("a timeout sent %d cancels", n)
	}
}

func TestMaxTurnSecsCancelsOutstandingTools(t *testing.T) {
	h := newHarness(t, Config{Limits: Limits{MaxTurn: 200 * time.Millisecond, MaxTool: time.Minute}}, map[string]string{"box": "hang"})
	id := h.create(toolSession("hang"))
	_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
	if Code(err) != api.CodeTimeout {
		t.Fatalf("err = %v", err)
	}
	recs := h.records(id)
	toolSeq := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	e := decode[api.ToolCallEnded](t, ofKind(recs, api.KindToolCallEnded)[0].Data)
	if e.Outcome.Status != api.OutcomeCancelled || e.Sequence != toolSeq {
		t.Fatalf("outcome = %+v", e)
	}
	cancels := h.envs.opsOf(envapi.RequestCancel)
	if len(cancels) != 1 || cancels[0].Request.TargetSequence != toolSeq {
		t.Fatalf("cancels = %+v", cancels)
	}
	if len(ofKind(recs, api.KindToolCancelEnded)) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	// Outcomes are recorded before the turn closes.
	ended := ofKind(recs, api.KindToolCancelEnded)[0].Sequence
	if tf := ofKind(recs, api.KindTurnFailed)[0]; tf.Sequence < ended || decode[api.Failure](t, tf.Data).Code != api.FailureTimeout {
		t.Fatalf("turn_failed %d before tool_cancel_ended %d", tf.Sequence, ended)
	}
}

func TestInterruptKeepsSessionUsable(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"delay_ms": 60000})})
		errc <- err
	}()
	h.waitEvent(id, 0, api.KindModelCallStarted)
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; Code(err) != api.CodeCancelled {
		t.Fatalf("send after interrupt: %v", err)
	}
	recs := h.records(id)
	if f := decode[api.Failure](t, ofKind(recs, api.KindModelCallFailed)[0].Data); f.Code != api.FailureCancelled {
		t.Fatalf("model_call_failed = %+v", f)
	}
	if f := decode[api.Failure](t, ofKind(recs, api.KindTurnFailed)[0].Data); f.Code != api.FailureCancelled {
		t.Fatalf("turn_failed = %+v", f)
	}
	sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("next turn: %+v %v", sum, err)
	}
}

func TestInterruptCancelsBackgroundTool(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "ok"})}); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	ev := h.waitEvent(id, 0, api.KindToolCancelEnded)
	recs := h.records(id)
	e := decode[api.ToolCallEnded](t, ofKind(recs, api.KindToolCallEnded)[0].Data)
	if e.Outcome.Status != api.OutcomeCancelled || len(h.envs.opsOf(envapi.RequestCancel)) != 1 {
		t.Fatalf("outcome %+v", e)
	}
	// Interruption stops automatic activations: no activation follows.
	if n := len(ofKind(recs, api.KindActivationStarted)); n != 1 || ev.Sequence != uint64(len(recs)) {
		t.Fatalf("records after interrupt = %v", kinds(recs))
	}
}

// emitLoop emits the events listed in its configuration-free closure.
func emitLoop(emits *[]error, payloads ...[]byte) agentloop.Func {
	return func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		for _, p := range payloads {
			kind, data, _ := bytes.Cut(p, []byte(" "))
			_, err := svc.Emit(ctx, string(kind), data)
			*emits = append(*emits, err)
		}
		return api.TurnOutput{}, nil
	}
}

func TestEmittedBytesBudget(t *testing.T) {
	var errs []error
	big := []byte(`note "` + strings.Repeat("x", 1024) + `"`)
	loops := map[string]agentloop.Func{"emit": emitLoop(&errs, []byte(`small {"a":1}`), big, []byte(`small2 {"b":2}`))}
	h := newHarness(t, Config{Loops: testLoops(loops), Limits: Limits{MaxEmittedBytes: 200}}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("emit")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], ErrEmitLimit) || Code(errs[1]) != api.CodeEmitLimit || errs[2] != nil {
		t.Fatalf("emit errors = %v", errs)
	}
	recs := ofKind(h.records(id), api.KindExtensionEvent)
	if len(recs) != 2 {
		t.Fatalf("%d extension events appended", len(recs))
	}
	for _, r := range recs {
		if bytes.Contains(r.Data, []byte("xxxx")) {
			t.Fatal("an event past the budget was appended")
		}
	}
}

func TestOriginAndReservedNames(t *testing.T) {
	var errs []error
	loops := map[string]agentloop.Func{"emit": emitLoop(&errs,
		[]byte(`progress {"origin":{"kind":"tool","sequence":1},"n":1}`),
		[]byte(`turn_ended {}`), []byte(`_extension_event {}`), []byte(`model_call_limit {}`),
		[]byte(`conflict {}`), []byte(`tool_call_ended {}`))}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("emit")})
	before := len(h.records(id))
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	for i, err := range errs[1:] {
		if !errors.Is(err, ErrReservedName) || Code(err) != api.CodeReservedName {
			t.Fatalf("emit %d: %v", i+1, err)
		}
	}
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindExtensionEvent)); n != 1 {
		t.Fatalf("%d extension events", n)
	}
	page, _ := h.engine.Events(context.Background(), id, uint64(before))
	act := ofKind(recs, api.KindActivationStarted)[0].Sequence
	for _, ev := range page.Events {
		if ev.EventType == "progress" {
			if ev.Origin == nil || ev.Origin.Kind != api.OriginAgentloop || ev.Origin.Sequence != act {
				t.Fatalf("origin = %+v", ev.Origin)
			}
			if !strings.Contains(string(ev.Data), `"n":1`) {
				t.Fatalf("data = %s", ev.Data)
			}
			return
		}
	}
	t.Fatal("no progress event")
}

// A model call refused before it is sent (here it offers a tool that is
// not the session's) is no model call: it leaves the turn's budget for
// the calls that reach the model.
func TestRefusedModelCallLeavesTheBudget(t *testing.T) {
	var errs []error
	loops := map[string]agentloop.Func{"refused": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		msgs := []api.Message{api.UserMessage(*in.Input)}
		_, err := svc.Model(ctx, api.ModelRequest{Messages: msgs, Tools: []api.ToolDefinition{{Name: "absent", InputSchema: []byte(`{}`)}}})
		errs = append(errs, err)
		_, err = svc.Model(ctx, api.ModelRequest{Messages: msgs})
		errs = append(errs, err)
		_, err = svc.Model(ctx, api.ModelRequest{Messages: msgs})
		errs = append(errs, err)
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops), Limits: Limits{MaxModelCalls: 1}}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("refused")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 3 || Code(errs[0]) != api.CodeInvalidRequest || errs[1] != nil || Code(errs[2]) != api.CodeModelCallLimit {
		t.Fatalf("model calls answered %v, want invalid_request, success, model_call_limit", errs)
	}
	if n := len(ofKind(h.records(id), api.KindModelCallStarted)); n != 1 {
		t.Fatalf("%d model_call_started, want 1", n)
	}
}
