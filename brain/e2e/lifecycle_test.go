package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func TestLifecycle(t *testing.T) {
	s := start(t, "")

	t.Run("case25_origin", func(t *testing.T) { testOrigin(t, s) })
	t.Run("case26_reserved_names", func(t *testing.T) { testReservedNames(t, s) })
	limited := start(t, "", "BRAIN_MAX_EMITTED_BYTES=200", "BRAIN_MAX_MODEL_CALLS=1")
	t.Run("case27_emit_limit", func(t *testing.T) { testEmitLimit(t, limited) })
	t.Run("case28_model_call_limit", func(t *testing.T) { testModelCallLimit(t, limited) })
	t.Run("case29_tool_deadline", testToolDeadline)
	t.Run("case30_turn_deadline", testTurnDeadline)
	t.Run("case31_cancel", func(t *testing.T) {
		id := s.create().SessionID
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		resp := s.stream(ctx, id, "?after=0")
		defer resp.Body.Close()
		r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":"{\"delay_ms\":20000}"}}`, "Idempotency-Key", key(), "Prefer", "respond-async")
		if r.Status != 202 {
			t.Fatalf("submit = %d %s", r.Status, r.Body)
		}
		// Cancel once the model call is running.
		frames(resp.Body, func(f frame) bool { return f.Event != "model_call_started" })
		start := time.Now()
		if r := s.do("POST", "/v1/sessions/"+id+"/cancel", "", "Idempotency-Key", key()); r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("cancel = %d %s", r.Status, r.Body)
		}
		var failed api.Failure
		frames(resp.Body, func(f frame) bool {
			if f.Event == "turn_failed" {
				var ev api.Event
				json.Unmarshal([]byte(f.Data), &ev)
				json.Unmarshal(ev.Data, &failed)
				return false
			}
			return true
		})
		if failed.Code != "cancelled" || time.Since(start) > 10*time.Second {
			t.Fatalf("turn_failed %+v after %v", failed, time.Since(start))
		}
		waitIdle(t, s, id)
		if r := s.send(id, "after cancel"); r.Status != 200 {
			t.Fatalf("next message = %d %s", r.Status, r.Body)
		}
	})
}

// loopSession creates a session whose agentloop runs on p's environment
// "agent", with tools on p's environment "box".
func loopSession(s *server, p *provider, tools ...api.Tool) string {
	return s.createSession(api.CreateSessionRequest{Agentloop: remoteLoop(),
		Environments: []api.Environment{p.env("agent", false), p.env("box", false)}, Tools: tools})
}

// builtinSession creates a session of the built-in loop with tools on p's
// environment "box".
func builtinSession(s *server, p *provider, tools ...api.Tool) string {
	return s.createSession(api.CreateSessionRequest{Environments: []api.Environment{p.env("box", false)}, Tools: tools})
}

// case 25: Brain assigns the origin of extension events; a payload cannot
// spoof it; kernel records carry none.
func testOrigin(t *testing.T, s *server) {
	// Kernel records of a plain turn have no origin.
	plain := s.create().SessionID
	s.send(plain, "x")
	for _, ev := range s.events(plain) {
		if ev.Origin != nil {
			t.Fatalf("kernel record %s carries origin %+v", ev.EventType, ev.Origin)
		}
	}

	p := newProvider(t)
	id := loopSession(s, p, tool("emitter", "box", "emit"))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp := s.stream(ctx, id, "?after=0")
	defer resp.Body.Close()
	spoof := map[string]any{"step": 1, "origin": map[string]any{"kind": "tool", "sequence": 1}}
	r := s.send(id, script(map[string]any{
		"emit":     []map[string]any{{"event_type": "progress", "data": spoof}},
		"dispatch": []map[string]any{{"name": "emitter", "input": map[string]any{}}},
	}))
	if r.Status != 200 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	evs := s.events(id)
	acts, tools := ofKind(evs, api.KindActivationStarted), ofKind(evs, api.KindToolCallStarted)
	progress, toolProgress := ofKind(evs, "progress"), ofKind(evs, "tool_progress")
	if len(acts) != 1 || len(tools) != 1 || len(progress) != 1 || len(toolProgress) != 1 {
		t.Fatalf("events %v", kinds(evs))
	}
	want := api.EventOrigin{Kind: api.OriginAgentloop, Sequence: acts[0].Sequence}
	if o := progress[0].Origin; o == nil || *o != want {
		t.Errorf("loop emit origin %+v, want %+v", o, want)
	}
	if dataField[map[string]any](t, progress[0], "origin")["kind"] != "tool" {
		t.Errorf("loop emit payload %s, want it as emitted", progress[0].Data)
	}
	wantTool := api.EventOrigin{Kind: api.OriginTool, Sequence: tools[0].Sequence}
	if o := toolProgress[0].Origin; o == nil || *o != wantTool {
		t.Errorf("tool emit origin %+v, want %+v", o, wantTool)
	}
	res := turnResult(t, evs, lastTurn(t, evs))
	if len(res.Emits) != 1 || res.Emits[0].Sequence != progress[0].Sequence {
		t.Errorf("emit answered %+v, want sequence %d", res.Emits, progress[0].Sequence)
	}
	if len(res.Returns) != 1 || res.Returns[0].Sequence != tools[0].Sequence || !res.Returns[0].Finished {
		t.Errorf("dispatch answered %+v", res.Returns)
	}
	for _, ev := range evs {
		if ev.Origin != nil && ev.Sequence != progress[0].Sequence && ev.Sequence != toolProgress[0].Sequence {
			t.Errorf("kernel record %d %s carries origin %+v", ev.Sequence, ev.EventType, ev.Origin)
		}
	}
	// SSE frames carry the same origin.
	got := map[string]api.EventOrigin{}
	frames(resp.Body, func(f frame) bool {
		if f.Event == "progress" || f.Event == "tool_progress" {
			var ev api.Event
			json.Unmarshal([]byte(f.Data), &ev)
			if ev.Origin != nil {
				got[f.Event] = *ev.Origin
			}
		}
		return len(got) < 2 && f.Event != api.KindTurnEnded
	})
	if got["progress"] != want || got["tool_progress"] != wantTool {
		t.Errorf("SSE origins %+v", got)
	}
}

// case 26: reserved kinds cannot be emitted and append nothing.
func testReservedNames(t *testing.T, s *server) {
	p := newProvider(t)
	id := loopSession(s, p)
	r := s.send(id, script(map[string]any{"emit": []map[string]any{
		{"event_type": api.KindTurnEnded, "data": map[string]any{}},
		{"event_type": api.KindExtensionEvent, "data": map[string]any{"kind": "x"}},
	}}))
	if r.Status != 200 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	evs := s.events(id)
	res := turnResult(t, evs, lastTurn(t, evs))
	if len(res.Emits) != 2 {
		t.Fatalf("emits %+v", res.Emits)
	}
	for i, e := range res.Emits {
		if e.Status != 422 || e.Code != "reserved_name" {
			t.Errorf("emit %d answered %+v, want 422 reserved_name", i, e)
		}
	}
	if n := count(evs, api.KindTurnEnded); n != 1 {
		t.Errorf("%d turn_ended: %v", n, kinds(evs))
	}
	for _, ev := range evs {
		if ev.Origin != nil || ev.EventType == api.KindExtensionEvent {
			t.Errorf("appended %d %s origin %+v", ev.Sequence, ev.EventType, ev.Origin)
		}
	}
}

// case 27: emissions beyond BRAIN_MAX_EMITTED_BYTES (200) are refused.
func testEmitLimit(t *testing.T, s *server) {
	p := newProvider(t)
	id := loopSession(s, p)
	r := s.send(id, script(map[string]any{"emit": []map[string]any{
		{"event_type": "small", "data": map[string]any{"n": 1}},
		{"event_type": "big", "data": map[string]any{"pad": strings.Repeat("x", 1024)}},
	}}))
	if r.Status != 200 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	evs := s.events(id)
	res := turnResult(t, evs, lastTurn(t, evs))
	if len(res.Emits) != 2 || res.Emits[0].Sequence == 0 || res.Emits[1].Status != 409 || res.Emits[1].Code != "emit_limit" {
		t.Fatalf("emits answered %+v, want a sequence then 409 emit_limit", res.Emits)
	}
	if count(evs, "small") != 1 || count(evs, "big") != 0 {
		t.Errorf("events %v", kinds(evs))
	}
}

// case 28: with BRAIN_MAX_MODEL_CALLS=1 the second model call of a turn
// fails model_call_limit and is never started.
func testModelCallLimit(t *testing.T, s *server) {
	p := newProvider(t)
	t.Run("builtin", func(t *testing.T) {
		// The scripted tool call makes the built-in loop call the model
		// again after the tool result.
		id := builtinSession(s, p, tool("echo", "box", "echo"))
		r := s.send(id, script(map[string]any{"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{"n": 1}}}}))
		if r.Status == 200 || r.apiError(t).Code != api.FailureModelCallLimit {
			t.Fatalf("send = %d %s, want model_call_limit", r.Status, r.Body)
		}
		evs := s.events(id)
		if n := count(evs, api.KindModelCallStarted); n != 1 {
			t.Errorf("%d model_call_started: %v", n, kinds(evs))
		}
		if count(evs, api.KindToolCallEnded) != 1 {
			t.Errorf("the tool did not run: %v", kinds(evs))
		}
		tf := ofKind(evs, api.KindTurnFailed)
		if len(tf) != 1 || failurePayload(tf[0]).Code != api.FailureModelCallLimit {
			t.Errorf("turn_failed %+v", tf)
		}
	})
	t.Run("remote", func(t *testing.T) {
		id := loopSession(s, p)
		if r := s.send(id, script(map[string]any{"model": 2})); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		evs := s.events(id)
		res := turnResult(t, evs, lastTurn(t, evs))
		if len(res.Models) != 2 || res.Models[0] != (callResult{}) || res.Models[1].Code != api.FailureModelCallLimit {
			t.Errorf("model calls answered %+v, want ok then model_call_limit", res.Models)
		}
		if n := count(evs, api.KindModelCallStarted); n != 1 {
			t.Errorf("%d model_call_started: %v", n, kinds(evs))
		}
	})
}

// case 29: BRAIN_MAX_TOOL_SECS=1 and a provider that holds the execute 5 s:
// the tool times out at its deadline.
func testToolDeadline(t *testing.T) {
	s := start(t, "", "BRAIN_MAX_TOOL_SECS=1")
	p := newProvider(t)
	id := builtinSession(s, p, tool("slow", "box", "hold"))
	begin := time.Now()
	r := s.send(id, script(map[string]any{"tool_calls": []map[string]any{{"name": "slow", "input": map[string]any{}}}}))
	took := time.Since(begin)
	if r.Status != 200 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	evs := s.events(id)
	started, ended := ofKind(evs, api.KindToolCallStarted), ofKind(evs, api.KindToolCallEnded)
	if len(started) != 1 || len(ended) != 1 || dataField[uint64](t, ended[0], "sequence") != started[0].Sequence {
		t.Fatalf("events %v", kinds(evs))
	}
	if o := dataField[map[string]any](t, ended[0], "outcome"); o["status"] != "timeout" || !dataField[bool](t, ended[0], "is_error") {
		t.Errorf("tool_call_ended %s, want outcome {status:timeout} and is_error", ended[0].Data)
	}
	if took > 4*time.Second {
		t.Errorf("the turn took %v: the tool deadline did not stop waiting for the provider", took)
	}
	execs := p.Received(envapi.RequestExecute, "box")
	if len(execs) != 1 {
		t.Fatalf("provider received %d executes, want 1", len(execs))
	}
	if d := execs[0].Cmd.Operation.Request.DeadlineMs; d == nil || *d <= 0 || *d > 1000 || execs[0].Cmd.Operation.Sequence != started[0].Sequence {
		t.Errorf("execute %s, want deadline_ms in (0, 1000] and sequence %d", execs[0].Raw, started[0].Sequence)
	}
}

// case 30: BRAIN_MAX_TURN_SECS=1 with a hanging tool: the turn fails, the
// tool is cancelled and the provider receives cancel for it.
func testTurnDeadline(t *testing.T) {
	s := start(t, "", "BRAIN_MAX_TURN_SECS=1")
	p := newProvider(t)
	id := builtinSession(s, p, tool("stuck", "box", "hang"))
	begin := time.Now()
	r := s.send(id, script(map[string]any{"tool_calls": []map[string]any{{"name": "stuck", "input": map[string]any{}}}}))
	if r.Status == 200 {
		t.Fatalf("send = %d %s, want the turn to fail", r.Status, r.Body)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("the turn took %v", took)
	}
	evs := s.events(id)
	if len(ofKind(evs, api.KindTurnFailed)) != 1 {
		t.Fatalf("events %v", kinds(evs))
	}
	started := ofKind(evs, api.KindToolCallStarted)
	if len(started) != 1 {
		t.Fatalf("events %v", kinds(evs))
	}
	seq := started[0].Sequence
	var outcome api.Event
	for _, ev := range append(ofKind(evs, api.KindToolCallEnded), ofKind(evs, api.KindToolCallFailed)...) {
		if dataField[uint64](t, ev, "sequence") == seq {
			outcome = ev
		}
	}
	if outcome.EventType != api.KindToolCallEnded || dataField[map[string]any](t, outcome, "outcome")["status"] != "cancelled" ||
		!dataField[bool](t, outcome, "is_error") {
		t.Errorf("tool outcome %s %s, want tool_call_ended {status:cancelled} is_error", outcome.EventType, outcome.Data)
	}
	cancels := p.WaitFor(envapi.RequestCancel, "box", 1)
	if len(cancels) != 1 || cancels[0].Cmd.Operation.Request.TargetSequence != seq {
		t.Errorf("provider received cancels %v, want one for %d", cancels, seq)
	}
	if n := len(p.Received(envapi.RequestExecute, "box")); n != 1 {
		t.Errorf("provider received %d executes", n)
	}
	waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindToolCancelEnded })
	waitIdle(t, s, id)
}
