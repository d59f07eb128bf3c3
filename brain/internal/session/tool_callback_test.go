package session

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// oneCall is a model script that calls tool echo once, then replies.
func oneCall() string {
	return script(map[string]any{"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{}}}, "reply": "waiting"})
}

// returned and finish take an optional outcome: JSON null adds no new
// result, so a tool that committed result X through its callback and then
// returns and finishes with null closes with outcome X.
func TestNullReturnedAndFinishKeepLastResult(t *testing.T) {
	for _, c := range []struct {
		behaviour string
		// result is sent through the callback after the return, when set
		// (resultreturner sends its own before returning with null).
		result string
	}{
		{"returner", `{"status":"ok","value":{"rows":3}}`},
		{"resultreturner", ""},
	} {
		t.Run(c.behaviour, func(t *testing.T) {
			h := newHarness(t, Config{}, map[string]string{"box": c.behaviour})
			id := h.create(toolSession(c.behaviour))
			ctx := context.Background()
			if _, err := h.engine.Send(ctx, id, api.UserInput{Message: oneCall()}); err != nil {
				t.Fatal(err)
			}
			recs := h.records(id)
			toolSeq := ofKind(recs, api.KindToolCallStarted)[0].Sequence
			returned := ofKind(recs, api.KindToolCallReturned)
			if len(returned) != 1 || len(ofKind(recs, api.KindToolCallEnded)) != 0 {
				t.Fatalf("records = %v", kinds(recs))
			}
			if o := decode[toolOutcome](t, returned[0].Data); o.Sequence != toolSeq || o.Outcome != nil {
				t.Fatalf("tool_call_returned = %+v, want no outcome", o)
			}
			svc, err := h.engine.Execution(id, toolSeq)
			if err != nil {
				t.Fatal(err)
			}
			if c.result != "" {
				if _, err := svc.Call(ctx, envapi.MethodResult, json.RawMessage(c.result)); err != nil {
					t.Fatal(err)
				}
			}
			out, err := svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`null`))
			if err != nil {
				t.Fatal(err)
			}
			recs = h.records(id)
			if n := len(ofKind(recs, api.KindToolResultEmitted)); n != 1 {
				t.Fatalf("%d tool_result_emitted: %v", n, kinds(recs))
			}
			ended := ofKind(recs, api.KindToolCallEnded)
			if len(ended) != 1 || string(out) != strconv.FormatUint(ended[0].Sequence, 10) {
				t.Fatalf("finish answered %s; tool_call_ended records %v", out, kinds(recs))
			}
			e := decode[api.ToolCallEnded](t, ended[0].Data)
			if e.Sequence != toolSeq || e.IsError || e.Outcome.Status != api.OutcomeOK || string(e.Outcome.Value) != `{"rows":3}` {
				t.Fatalf("tool_call_ended = %+v (value %s), want ok {\"rows\":3}", e, e.Outcome.Value)
			}
		})
	}
}

// A returned tool's callback stays valid after the return, until the
// tool's original deadline: then the tool closes as timeout and its
// callback refuses further emissions.
func TestReturnedToolCallbackUntilDeadline(t *testing.T) {
	const deadline = time.Second
	h := newHarness(t, Config{Limits: Limits{MaxTool: deadline}}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Submit(ctx, id, api.UserInput{Message: oneCall()}); err != nil {
		t.Fatal(err)
	}
	ret := h.waitEvent(id, 0, api.KindToolCallReturned)
	toolSeq := decode[toolOutcome](t, ret.Data).Sequence
	svc, err := h.engine.Execution(id, toolSeq)
	if err != nil {
		t.Fatalf("the returned tool's execution: %v", err)
	}
	emitted, err := svc.Emit(ctx, "after_return", json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatalf("emit right after the return: %v", err)
	}
	ev := h.waitEvent(id, ret.Sequence, api.KindToolCallEnded)
	e := decode[api.ToolCallEnded](t, ev.Data)
	if e.Sequence != toolSeq || e.Outcome.Status != api.OutcomeTimeout || !e.IsError {
		t.Fatalf("tool_call_ended = %+v, want timeout", e)
	}
	if emitted <= ret.Sequence || emitted >= ev.Sequence {
		t.Fatalf("emission %d not between the return %d and the end %d", emitted, ret.Sequence, ev.Sequence)
	}
	recs := h.records(id)
	started := recs[toolSeq-1]
	if started.Sequence != toolSeq || started.Kind != api.KindToolCallStarted {
		t.Fatalf("record %d is %s", started.Sequence, started.Kind)
	}
	if took := recs[ev.Sequence-1].RecordedAtMs - started.RecordedAtMs; took < deadline.Milliseconds()-10 {
		t.Fatalf("the tool timed out %d ms after it started, before its %v deadline", took, deadline)
	}
	if execs := h.envs.opsOf(envapi.RequestExecute); len(execs) != 1 || execs[0].Request.DeadlineMs == nil || *execs[0].Request.DeadlineMs != deadline.Milliseconds() {
		t.Fatalf("executes = %+v", execs)
	}
	before := len(recs)
	_, err = svc.Emit(ctx, "after_deadline", json.RawMessage(`{"n":2}`))
	if !errors.Is(err, ErrExecutionClosed) || Code(err) != api.CodeNotGranted {
		t.Fatalf("emit after the deadline = %v, want ErrExecutionClosed (not_granted)", err)
	}
	for _, r := range h.records(id)[before:] {
		if r.Kind == api.KindExtensionEvent {
			t.Fatalf("a refused emission was recorded at %d", r.Sequence)
		}
	}
}

// returned ends a tool's synchronous phase once: the same returned sent
// again (a callback retried after its answer was lost) answers the
// sequence of the record the first one made and records nothing, and a
// returned carrying another outcome is refused as a conflict instead of
// recording a second end of the phase.
func TestReturnedAgainRecordsNothing(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: oneCall()}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	toolSeq := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	returned := ofKind(recs, api.KindToolCallReturned)
	if len(returned) != 1 {
		t.Fatalf("records = %v", kinds(recs))
	}
	svc, err := h.engine.Execution(id, toolSeq)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		out, err := svc.Call(ctx, envapi.MethodReturned, json.RawMessage(`null`))
		if err != nil || string(out) != strconv.FormatUint(returned[0].Sequence, 10) {
			t.Fatalf("returned again: %s, %v; want the first record's sequence %d", out, err, returned[0].Sequence)
		}
	}
	if _, err := svc.Call(ctx, envapi.MethodReturned, json.RawMessage(`{"status":"ok","value":1}`)); !errors.Is(err, ErrWrongState) {
		t.Fatalf("returned with another outcome: %v, want ErrWrongState", err)
	}
	after := h.records(id)
	if n := len(ofKind(after, api.KindToolCallReturned)); n != 1 || len(after) != len(recs) {
		t.Fatalf("after returning again: %d tool_call_returned, records %v (were %v)", n, kinds(after), kinds(recs))
	}
	// The tool is still open: finish closes it.
	if _, err := svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`null`)); err != nil {
		t.Fatal(err)
	}
	if n := len(ofKind(h.records(id), api.KindToolCallEnded)); n != 1 {
		t.Fatalf("%d tool_call_ended after finish", n)
	}
}
