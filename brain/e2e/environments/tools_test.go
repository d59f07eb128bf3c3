package environments

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// postGrant posts body to a grant URL with its bearer token.
func postGrant(t *testing.T, url, token string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// outcome answers the outcome of the tool_call_ended closing tool seq.
func outcome(t *testing.T, evs []api.Event, seq uint64) (api.Outcome, bool) {
	t.Helper()
	for _, ev := range find(evs, api.KindToolCallEnded) {
		if field[uint64](t, ev, "sequence") == seq {
			return field[api.Outcome](t, ev, "outcome"), field[bool](t, ev, "is_error")
		}
	}
	t.Fatalf("tool %d has no tool_call_ended: %s", seq, kinds(evs))
	return api.Outcome{}, false
}

func TestTools(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)

	t.Run("echo_and_emit_origin", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)},
			Tools: []api.Tool{tool("echo", "box", "echo"), tool("emitter", "box", "emit")}}).SessionID
		if status, body := c.send(id, toolCalls("echo", "emitter")); status != http.StatusOK {
			t.Fatalf("send: %d %s", status, body)
		}
		evs := c.events(id)
		starts := find(evs, api.KindToolCallStarted)
		execs := f.received(envapi.RequestExecute)
		if len(starts) != 2 || len(execs) != 2 {
			t.Fatalf("%d started, %d executes: %s", len(starts), len(execs), kinds(evs))
		}
		for _, x := range execs {
			op := x.Cmd.Operation
			g := op.Request.Callback
			if g == nil || g.Token == "" || !strings.HasPrefix(g.URL, b.URL+"/v1/sessions/"+id+"/executions/") ||
				strings.Join(g.Methods, ",") != strings.Join(envapi.ToolMethods(), ",") {
				t.Errorf("callback grant %+v", g)
			}
			if op.Request.DeadlineMs == nil || *op.Request.DeadlineMs != 120000 {
				t.Errorf("deadline_ms %v", op.Request.DeadlineMs)
			}
			if op.Sequence != starts[0].Sequence && op.Sequence != starts[1].Sequence {
				t.Errorf("execute sequence %d is no tool_call_started", op.Sequence)
			}
		}
		o, isErr := outcome(t, evs, starts[0].Sequence)
		if isErr || o.Status != api.OutcomeOK || string(o.Value) != `{"n":0}` {
			t.Errorf("echo outcome %+v", o)
		}
		progress := find(evs, "progress")
		if len(progress) != 1 || progress[0].Origin == nil || progress[0].Origin.Kind != api.OriginTool ||
			progress[0].Origin.Sequence != starts[1].Sequence {
			t.Fatalf("tool emit: %+v", progress)
		}
		// Tokens are revoked as the executions close.
		for _, x := range execs {
			g := x.Cmd.Operation.Request.Callback
			req, _ := http.NewRequest(http.MethodPost, g.URL, strings.NewReader(`{"method":"emit","input":{"type":"late","data":{}}}`))
			req.Header.Set("Authorization", "Bearer "+g.Token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("a call with the token of a finished execution answered %d, want 401", resp.StatusCode)
			}
		}
	})

	t.Run("case46_failure_unchanged", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("bad", "box", "fail")}}).SessionID
		c.send(id, toolCalls("bad"))
		evs := c.events(id)
		o, isErr := outcome(t, evs, find(evs, api.KindToolCallStarted)[0].Sequence)
		if !isErr || o.Error == nil || o.Error.Code != "unsupported" || o.Error.Message != "m" || !o.Error.Retryable || string(o.Error.Details) != `{"x":1}` {
			t.Fatalf("outcome %+v %+v", o, o.Error)
		}
		if n := len(f.received(envapi.RequestExecute)); n != 1 {
			t.Errorf("executes %d, want 1 (no retry)", n)
		}
	})

	t.Run("explicit_unknown_is_not_unreachable", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("u", "box", "unknown")}}).SessionID
		c.send(id, toolCalls("u"))
		evs := c.events(id)
		o, _ := outcome(t, evs, find(evs, api.KindToolCallStarted)[0].Sequence)
		if o.Status != api.OutcomeUnknown || len(find(evs, api.KindEnvironmentUnreachable)) != 0 {
			t.Fatalf("outcome %+v, events %s", o, kinds(evs))
		}
	})

	t.Run("case47_connection_refused", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("echo", "box", "echo")}}).SessionID
		addr := strings.TrimPrefix(f.URL, "http://")
		f.Shutdown()
		c.send(id, toolCalls("echo"))
		evs := c.events(id)
		start := find(evs, api.KindToolCallStarted)[0]
		o, isErr := outcome(t, evs, start.Sequence)
		if !isErr || o.Status != api.OutcomeUnknown {
			t.Fatalf("outcome %+v", o)
		}
		unr := find(evs, api.KindEnvironmentUnreachable)
		if len(unr) != 1 || field[uint64](t, unr[0], "sequence") != start.Sequence {
			t.Fatalf("environment_unreachable: %s", kinds(evs))
		}
		// The provider comes back at the same address: nothing is resent,
		// and the next turn executes anew.
		g := newFixtureAt(t, addr)
		c.send(id, toolCalls("echo"))
		execs := g.received(envapi.RequestExecute)
		if len(execs) != 1 || execs[0].Cmd.Operation.Sequence == start.Sequence {
			t.Fatalf("after restart the provider saw %+v", execs)
		}
	})

	t.Run("case48_49_returned_then_finish", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("later", "box", "returned")}}).SessionID
		if status, body := c.send(id, toolCalls("later")); status != http.StatusOK {
			t.Fatalf("send: %d %s", status, body)
		}
		evs := c.events(id)
		start := find(evs, api.KindToolCallStarted)[0]
		if len(find(evs, api.KindToolCallReturned)) != 1 || len(find(evs, api.KindToolCallEnded)) != 0 || len(find(evs, api.KindTurnEnded)) != 1 {
			t.Fatalf("the unfinished tool did not survive the turn: %s", kinds(evs))
		}
		x := f.received(envapi.RequestExecute)[0]
		g := x.Cmd.Operation.Request.Callback
		// An unlisted method is refused while the tool is open.
		status, body := postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "kv_put", Input: json.RawMessage(`{"key":"a","value":1}`)})
		if status != http.StatusForbidden || !strings.Contains(string(body), `"not_granted"`) {
			t.Fatalf("kv_put from a tool: %d %s", status, body)
		}
		status, body = postGrant(t, g.URL, "wrong", envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":{}}`)})
		if status != http.StatusUnauthorized || !strings.Contains(string(body), `"unauthorized"`) {
			t.Fatalf("wrong token: %d %s", status, body)
		}
		status, body = postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"turn_ended","data":{}}`)})
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"reserved_name"`) {
			t.Fatalf("reserved emit: %d %s", status, body)
		}
		f.Open("finish")
		select {
		case err := <-f.later:
			if err != nil {
				t.Fatalf("finish after return: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("finish did not complete")
		}
		end := c.waitEvent(id, withData(api.KindToolCallEnded, "sequence", start.Sequence))
		act := c.waitEvent(id, func(ev api.Event) bool {
			return ev.EventType == api.KindActivationStarted && ev.Sequence > end.Sequence
		})
		if field[string](t, act, "trigger") != "events" || len(find(c.events(id), api.KindTurnStarted)) != 1 {
			t.Errorf("the later result did not wake the loop without input: %s", act.Data)
		}
		if o, _ := outcome(t, c.events(id), start.Sequence); o.Status != api.OutcomeOK || string(o.Value) != `"finished later"` {
			t.Errorf("outcome %+v", o)
		}
		// case 49: the token is revoked with the finish.
		status, body = postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "finish", Input: json.RawMessage(`null`)})
		if status != http.StatusUnauthorized {
			t.Fatalf("finish after finish: %d %s", status, body)
		}
		status, _ = postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":{}}`)})
		if status != http.StatusUnauthorized {
			t.Fatalf("emit after finish: %d", status)
		}
		c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindActivationEnded && ev.Sequence > act.Sequence })
	})

	t.Run("schemas", func(t *testing.T) {
		f := newFixture(t)
		strict := tool("strict", "box", "echo")
		strict.InputSchema = json.RawMessage(`{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}`)
		typed := tool("typed", "box", "bad_output")
		typed.OutputSchema = json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}}}`)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{strict, typed}}).SessionID
		c.send(id, toolCalls("strict", "typed"))
		evs := c.events(id)
		starts := find(evs, api.KindToolCallStarted)
		in, _ := outcome(t, evs, starts[0].Sequence)
		out, _ := outcome(t, evs, starts[1].Sequence)
		if in.Error == nil || in.Error.Code != envapi.CodeInvalidInput {
			t.Errorf("invalid input outcome %+v", in)
		}
		if out.Error == nil || out.Error.Code != envapi.CodeInvalidOutput {
			t.Errorf("invalid output outcome %+v", out)
		}
		execs := f.received(envapi.RequestExecute)
		if len(execs) != 1 || execs[0].Cmd.Operation.Sequence != starts[1].Sequence {
			t.Errorf("the invalid input was executed: %d executes", len(execs))
		}
		// A schema Brain cannot read refuses the create.
		bad := tool("x", "box", "echo")
		bad.InputSchema = json.RawMessage(`{"type":"thing"}`)
		status, _ := c.do(http.MethodPost, "/v1/sessions", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"},
			Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{bad}}, nil)
		if status != http.StatusUnprocessableEntity {
			t.Errorf("create with an invalid schema: %d", status)
		}
	})

	t.Run("case52_reporter", func(t *testing.T) {
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}}).SessionID
		rep := f.received(envapi.RequestSetup)[0].Cmd.Operation.Reporter
		before := len(find(c.events(id), api.KindActivationStarted))
		status, body := postGrant(t, rep.URL, rep.Token, map[string]any{"type": "event", "event_type": "disk.usage", "data": map[string]int{"bytes": 1}})
		if status != http.StatusOK {
			t.Fatalf("diagnostic: %d %s", status, body)
		}
		status, body = postGrant(t, rep.URL, rep.Token, map[string]any{"type": "result",
			"output": map[string]any{"observation": map[string]any{"scope": "resource", "resource": "r", "code": "lost", "message": "m"}}})
		if status != http.StatusOK {
			t.Fatalf("result: %d %s", status, body)
		}
		var ans struct{ Sequence uint64 }
		_ = json.Unmarshal(body, &ans)
		evs := c.events(id)
		var obs api.Event
		for _, ev := range evs {
			if ev.Sequence == ans.Sequence {
				obs = ev
			}
		}
		want := api.EventOrigin{Kind: api.OriginEnvironment, Environment: &api.EnvironmentRef{Name: "box", Sequence: 1}}
		if obs.Origin == nil || obs.Origin.Kind != want.Kind || *obs.Origin.Environment != *want.Environment {
			t.Fatalf("observation %d: %+v in %s", ans.Sequence, obs, kinds(evs))
		}
		diag := find(evs, "disk.usage")
		if len(diag) != 1 || diag[0].Origin == nil || diag[0].Origin.Kind != api.OriginEnvironment {
			t.Fatalf("diagnostic: %+v", diag)
		}
		// The observation wakes the loop; the diagnostic (earlier) did not.
		act := c.waitEvent(id, func(ev api.Event) bool {
			return ev.EventType == api.KindActivationStarted && ev.Sequence > ans.Sequence
		})
		if before != 0 || diag[0].Sequence > act.Sequence || len(find(c.events(id), api.KindActivationStarted)) != 1 {
			t.Errorf("activations: %s", kinds(c.events(id)))
		}
		c.waitEvent(id, func(ev api.Event) bool { return ev.EventType == api.KindActivationEnded && ev.Sequence > act.Sequence })
		var view envapi.EnvironmentView
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/environments",
			map[string]any{"operation": "get", "environment": map[string]any{"name": "box", "sequence": 1}}, &view)
		if view.Observation == nil || view.Observation.Code != "lost" || view.ObservedAtMs == 0 {
			t.Errorf("view does not show the observation: %+v", view)
		}
		if status, _ := postGrant(t, rep.URL, "forged", map[string]any{"type": "event", "event_type": "x", "data": nil}); status != http.StatusUnauthorized {
			t.Errorf("wrong reporter token: %d", status)
		}
		other := strings.Replace(rep.URL, "/box/1/", "/box/2/", 1)
		if status, _ := postGrant(t, other, rep.Token, map[string]any{"type": "event", "event_type": "x", "data": nil}); status != http.StatusUnauthorized {
			t.Errorf("token of binding 1 on binding 2: %d", status)
		}
		if status, _ := postGrant(t, rep.URL, rep.Token, map[string]any{"type": "event", "event_type": "turn_ended", "data": nil}); status != http.StatusUnprocessableEntity {
			t.Errorf("reserved diagnostic: %d", status)
		}
		c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/end", nil, nil)
		if status, body := postGrant(t, rep.URL, rep.Token, map[string]any{"type": "event", "event_type": "late", "data": nil}); status != http.StatusNotFound {
			t.Errorf("report on a closed binding: %d %s", status, body)
		}
	})
}

func TestToolDeadline(t *testing.T) {
	t.Run("case29_tool_timeout", func(t *testing.T) {
		b := newBrain(t, brain.Limits{MaxTool: time.Second})
		c := newClient(t, b.URL)
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("slow", "box", "hang")}}).SessionID
		c.send(id, toolCalls("slow"))
		evs := c.events(id)
		start := find(evs, api.KindToolCallStarted)[0]
		o, isErr := outcome(t, evs, start.Sequence)
		if !isErr || o.Status != api.OutcomeTimeout {
			t.Fatalf("outcome %+v", o)
		}
		execs := f.received(envapi.RequestExecute)
		if len(execs) != 1 || execs[0].Cmd.Operation.Request.DeadlineMs == nil || *execs[0].Cmd.Operation.Request.DeadlineMs > 1000 {
			t.Fatalf("executes %+v", execs)
		}
	})
	t.Run("case30_turn_timeout", func(t *testing.T) {
		b := newBrain(t, brain.Limits{MaxTurn: time.Second})
		c := newClient(t, b.URL)
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("slow", "box", "hang")}}).SessionID
		status, _ := c.send(id, toolCalls("slow"))
		if status == http.StatusOK {
			t.Fatal("a turn past its deadline succeeded")
		}
		evs := c.events(id)
		start := find(evs, api.KindToolCallStarted)[0]
		if o, _ := outcome(t, evs, start.Sequence); o.Status != api.OutcomeCancelled {
			t.Fatalf("outcome %+v", o)
		}
		if len(find(evs, api.KindTurnFailed)) != 1 {
			t.Fatalf("events %s", kinds(evs))
		}
		cancels := f.waitFor(envapi.RequestCancel, 1)
		if cancels[0].Cmd.Operation.Request.TargetSequence != start.Sequence {
			t.Fatalf("cancel %+v", cancels[0].Cmd.Operation.Request)
		}
		c.waitEvent(id, ofType(api.KindToolCancelEnded))
	})
	t.Run("interrupt_cancels", func(t *testing.T) {
		b := newBrain(t, brain.Limits{})
		c := newClient(t, b.URL)
		f := newFixture(t)
		id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)}, Tools: []api.Tool{tool("slow", "box", "hang")}}).SessionID
		c.submit(id, toolCalls("slow"))
		x := f.waitFor(envapi.RequestExecute, 1)[0]
		c.must(http.StatusNoContent, http.MethodPost, "/v1/sessions/"+id+"/cancel", nil, nil)
		cancels := f.waitFor(envapi.RequestCancel, 1)
		if cancels[0].Cmd.Operation.Request.TargetSequence != x.Cmd.Operation.Sequence {
			t.Fatalf("cancel %+v", cancels[0].Cmd.Operation.Request)
		}
		c.waitEvent(id, ofType(api.KindTurnFailed))
		o, _ := outcome(t, c.events(id), x.Cmd.Operation.Sequence)
		if o.Status != api.OutcomeCancelled {
			t.Fatalf("outcome %+v", o)
		}
		g := x.Cmd.Operation.Request.Callback
		if status, _ := postGrant(t, g.URL, g.Token, envapi.ExecutionCall{Method: "emit", Input: json.RawMessage(`{"event_type":"x","data":{}}`)}); status != http.StatusUnauthorized {
			t.Errorf("callback after cancellation: %d", status)
		}
	})
}
