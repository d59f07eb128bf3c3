package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// waitEvent polls a session's events until one satisfies match.
func waitEvent(t *testing.T, s *server, id string, match func(api.Event) bool) api.Event {
	t.Helper()
	return pollEvent(t, func() []api.Event { return s.events(id) }, match)
}

// toolOutcome answers the terminal record of the tool call started at seq.
func toolOutcome(t *testing.T, evs []api.Event, seq uint64) api.Event {
	t.Helper()
	for _, ev := range evs {
		if (ev.EventType == api.KindToolCallEnded || ev.EventType == api.KindToolCallFailed) && dataField[uint64](t, ev, "sequence") == seq {
			return ev
		}
	}
	t.Fatalf("tool call %d has no terminal record: %v", seq, kinds(evs))
	return api.Event{}
}

// jsonEqual reports whether two JSON texts denote the same value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// toolTurn is a message whose scripted model calls tool name once.
func toolTurn(name string) string {
	return script(map[string]any{"tool_calls": []map[string]any{{"name": name, "input": map[string]any{}}}})
}

// TestEnvironmentProtocol drives environment/v1 through the real binary
// and checks, for each case, Brain's events and what the provider got.
func TestEnvironmentProtocol(t *testing.T) {
	s := start(t, "")

	t.Run("case46_failure_fields", func(t *testing.T) {
		p := newProvider(t)
		id := builtinSession(s, p, tool("broken", "box", "fail"))
		if r := s.send(id, toolTurn("broken")); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		evs := s.events(id)
		started := ofKind(evs, api.KindToolCallStarted)
		if len(started) != 1 {
			t.Fatalf("events %v", kinds(evs))
		}
		end := toolOutcome(t, evs, started[0].Sequence)
		want := `{"status":"error","error":{"code":"unsupported","message":"m","retryable":true,"details":{"x":1}}}`
		if end.EventType != api.KindToolCallEnded || !jsonEqual(dataField[json.RawMessage](t, end, "outcome"), []byte(want)) || !dataField[bool](t, end, "is_error") {
			t.Errorf("tool outcome %s %s, want outcome %s and is_error", end.EventType, end.Data, want)
		}
		// The loop saw an error result.
		r := s.do("GET", "/v1/sessions/"+id+"/transcript", "")
		var tr api.SessionTranscript
		json.Unmarshal(r.Body, &tr)
		found := false
		for _, m := range tr.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" {
					found = true
					if b.IsError == nil || !*b.IsError {
						t.Errorf("transcript tool_result %+v is not an error", b)
					}
				}
			}
		}
		if !found {
			t.Errorf("transcript has no tool_result: %s", r.Body)
		}
		if n := len(p.Received(envapi.RequestExecute, "box")); n != 1 {
			t.Errorf("provider received %d executes, want 1 (no retry)", n)
		}
	})

	t.Run("case47_unreachable", func(t *testing.T) {
		p := newProvider(t)
		id := builtinSession(s, p, tool("echo", "box", "echo"))
		p.Down()
		if r := s.send(id, toolTurn("echo")); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		evs := s.events(id)
		started := ofKind(evs, api.KindToolCallStarted)
		if len(started) != 1 {
			t.Fatalf("events %v", kinds(evs))
		}
		first := started[0].Sequence
		end := toolOutcome(t, evs, first)
		if end.EventType != api.KindToolCallEnded || dataField[map[string]any](t, end, "outcome")["status"] != "unknown" || !dataField[bool](t, end, "is_error") {
			t.Errorf("tool outcome %s %s, want {status:unknown} is_error", end.EventType, end.Data)
		}
		if len(ofKind(evs, api.KindEnvironmentUnreachable)) == 0 {
			t.Errorf("no environment_unreachable: %v", kinds(evs))
		}
		// The provider comes back: a later tool call reaches it, and the
		// unknown one is never sent again.
		p.Up()
		if r := s.send(id, toolTurn("echo")); r.Status != 200 {
			t.Fatalf("send after the provider returned = %d %s", r.Status, r.Body)
		}
		evs = s.events(id)
		started = ofKind(evs, api.KindToolCallStarted)
		if len(started) != 2 {
			t.Fatalf("events %v", kinds(evs))
		}
		if o := toolOutcome(t, evs, started[1].Sequence); dataField[map[string]any](t, o, "outcome")["status"] != "ok" {
			t.Errorf("second tool outcome %s", o.Data)
		}
		execs := p.Received(envapi.RequestExecute, "")
		if len(execs) != 1 || execs[0].Cmd.Operation.Sequence != started[1].Sequence {
			var seqs []uint64
			for _, e := range execs {
				seqs = append(seqs, e.Cmd.Operation.Sequence)
			}
			t.Errorf("provider received executes %v, want only %d (never %d)", seqs, started[1].Sequence, first)
		}
	})

	t.Run("case48_49_returned_then_finish", func(t *testing.T) {
		p := newProvider(t)
		id := loopSession(s, p, tool("later", "box", "returned"))
		if r := s.send(id, script(map[string]any{"dispatch": []map[string]any{{"name": "later", "input": map[string]any{}}}})); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		evs := s.events(id)
		turn := lastTurn(t, evs)
		started := ofKind(evs, api.KindToolCallStarted)
		if len(started) != 1 {
			t.Fatalf("events %v", kinds(evs))
		}
		tool := started[0].Sequence
		res := turnResult(t, evs, turn)
		if len(res.Returns) != 1 || res.Returns[0].Finished || res.Returns[0].Sequence != tool {
			t.Fatalf("dispatch answered %+v, want one unfinished return for %d", res.Returns, tool)
		}
		if n := count(evs, api.KindToolCallEnded) + count(evs, api.KindToolCallFailed); n != 0 {
			t.Fatalf("the returned tool closed before finish: %v", kinds(evs))
		}
		grant := p.Received(envapi.RequestExecute, "box")[0].Cmd.Operation.Request.Callback
		if grant == nil {
			t.Fatal("the tool execute carried no callback")
		}
		// case 49: a method the tool's grant does not list.
		if status, code := callGrant(t, grant, "", "kv_put", map[string]any{"key": "a", "value": 1}); status != 403 || code != "not_granted" {
			t.Errorf("kv_put from a tool = %d %s, want 403 not_granted", status, code)
		}
		wrong := *grant
		wrong.Token = "wrong"
		if status, code := callGrant(t, &wrong, "", "emit", map[string]any{"event_type": "x", "data": map[string]any{}}); status != 401 || code != "unauthorized" {
			t.Errorf("emit with a wrong token = %d %s, want 401 unauthorized", status, code)
		}
		if status, code := callGrant(t, grant, "", "emit", map[string]any{"event_type": "turn_ended", "data": map[string]any{}}); status != 422 || code != "reserved_name" {
			t.Errorf("emit of a reserved name = %d %s, want 422 reserved_name", status, code)
		}

		p.Open("finish")
		if err := <-p.later; err != nil {
			t.Fatalf("finish: %v", err)
		}
		end := waitEvent(t, s, id, func(ev api.Event) bool {
			return (ev.EventType == api.KindToolCallEnded || ev.EventType == api.KindToolCallFailed) && dataField[uint64](t, ev, "sequence") == tool
		})
		ended := waitEvent(t, s, id, func(ev api.Event) bool {
			return ev.EventType == api.KindActivationEnded && ev.Sequence > end.Sequence
		})
		evs = s.events(id)
		if end.EventType != api.KindToolCallEnded || !jsonEqual(dataField[json.RawMessage](t, end, "outcome"), []byte(`{"status":"ok","value":"finished later"}`)) {
			t.Errorf("tool outcome %s %s", end.EventType, end.Data)
		}
		var wake []api.Event
		for _, ev := range evs {
			if ev.Sequence > end.Sequence && ev.Sequence <= ended.Sequence {
				wake = append(wake, ev)
			}
		}
		if count(wake, api.KindActivationStarted) != 1 || count(wake, api.KindTurnStarted) != 0 {
			t.Errorf("after the finish: %v, want an activation and no turn", kinds(wake))
		}
		loops := p.WaitFor(envapi.RequestExecute, "agent", 2)
		var in api.TurnInput
		json.Unmarshal(loops[1].Cmd.Operation.Request.Input, &in)
		if in.Input != nil {
			t.Errorf("the woken activation got input %+v", in.Input)
		}
		got := false
		for _, ev := range in.Events {
			got = got || ev.Sequence == end.Sequence
		}
		if !got {
			t.Errorf("the woken activation's events %+v lack tool_call_ended %d", in.Events, end.Sequence)
		}
		// case 49: the token is closed once the tool finished.
		for _, m := range []string{"finish", "emit"} {
			var input any
			if m == "emit" {
				input = map[string]any{"event_type": "late", "data": nil}
			}
			if status, _ := callGrant(t, grant, "", m, input); status != 401 {
				t.Errorf("%s after finish = %d, want 401", m, status)
			}
		}
		if count(s.events(id), "late") != 0 {
			t.Error("an emit after finish was appended")
		}
	})

	t.Run("case51_release", func(t *testing.T) {
		p := newProvider(t)
		id := s.createSession(api.CreateSessionRequest{Environments: []api.Environment{p.env("box", true)}})
		// The answer comes while the release call is held.
		if r := s.send(id, "one"); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		turn1 := lastTurn(t, s.events(id))
		calls := p.WaitFor(envapi.RequestCall, "box", 1)
		if req := calls[0].Cmd.Operation.Request; req.Name != "release" || !jsonEqual(req.Input, []byte(`{"sequence":`+strconv.FormatUint(turn1, 10)+`}`)) {
			t.Errorf("turn-end call %s, want release {sequence:%d}", calls[0].Raw, turn1)
		}
		p.Open("release")
		waitEvent(t, s, id, func(ev api.Event) bool {
			return ev.EventType == api.KindEnvironmentCallEnded && ev.Sequence > turn1
		})
		// A failing release changes nothing about the turn.
		p.failRelease.Store(true)
		if r := s.send(id, "two"); r.Status != 200 {
			t.Fatalf("send = %d %s", r.Status, r.Body)
		}
		turn2 := lastTurn(t, s.events(id))
		calls = p.WaitFor(envapi.RequestCall, "box", 2)
		if req := calls[1].Cmd.Operation.Request; req.Name != "release" || !jsonEqual(req.Input, []byte(`{"sequence":`+strconv.FormatUint(turn2, 10)+`}`)) {
			t.Errorf("turn-end call %s, want release {sequence:%d}", calls[1].Raw, turn2)
		}
		waitEvent(t, s, id, func(ev api.Event) bool {
			return ev.EventType == api.KindEnvironmentCallFailed && ev.Sequence > turn2
		})
		evs := s.events(id)
		if count(evs, api.KindTurnEnded) != 2 || count(evs, api.KindTurnFailed) != 0 {
			t.Errorf("events %v", kinds(evs))
		}
		if n := len(p.Received(envapi.RequestCall, "")); n != 2 {
			t.Errorf("provider received %d calls, want 2", n)
		}
	})

	t.Run("case52_reporter", func(t *testing.T) {
		p := newProvider(t)
		id := loopSession(s, p)
		rep := p.Received(envapi.RequestSetup, "box")[0].Cmd.Operation.Reporter
		if rep == nil {
			t.Fatal("setup carried no reporter")
		}
		report := func(token string, body any) (int, uint64) {
			t.Helper()
			raw, _ := json.Marshal(body)
			status, ans := postBearer(t, rep.URL, token, raw)
			var seq struct {
				Sequence uint64 `json:"sequence"`
			}
			json.Unmarshal([]byte(ans), &seq)
			return status, seq.Sequence
		}
		result := map[string]any{"type": "result", "output": map[string]any{
			"observation": map[string]any{"scope": "resource", "resource": "r", "code": "lost", "message": "m"}}}
		if status, _ := report("wrong-token", result); status != 401 {
			t.Errorf("report with a wrong token = %d, want 401", status)
		}
		status, diag := report(rep.Token, map[string]any{"type": "event", "event_type": "disk_usage", "data": map[string]any{"pct": 50}})
		if status != 200 || diag == 0 {
			t.Fatalf("diagnostic report = %d %d", status, diag)
		}
		// A diagnostic alone starts nothing: give a wake-up ample time
		// (the coalescing window is 5 ms) before the actionable report.
		time.Sleep(300 * time.Millisecond)
		if evs := s.events(id); count(evs, api.KindActivationStarted) != 0 {
			t.Fatalf("a diagnostic started an activation: %v", kinds(evs))
		}
		status, obs := report(rep.Token, result)
		if status != 200 || obs <= diag {
			t.Fatalf("result report = %d %d", status, obs)
		}
		waitEvent(t, s, id, func(ev api.Event) bool { return ev.EventType == api.KindActivationEnded && ev.Sequence > obs })
		evs := s.events(id)
		want := api.EventOrigin{Kind: api.OriginEnvironment, Environment: &api.EnvironmentRef{Name: "box", Sequence: 1}}
		for _, seq := range []uint64{diag, obs} {
			var ev *api.Event
			for i := range evs {
				if evs[i].Sequence == seq {
					ev = &evs[i]
				}
			}
			if ev == nil || ev.Origin == nil || !reflect.DeepEqual(*ev.Origin, want) {
				t.Errorf("reported event %d: %+v, want origin %+v", seq, ev, want)
			}
		}
		if acts := ofKind(evs, api.KindActivationStarted); len(acts) != 1 || acts[0].Sequence < obs || count(evs, api.KindTurnStarted) != 0 {
			t.Errorf("events %v, want one activation after %d and no turn", kinds(evs), obs)
		}
		loops := p.Received(envapi.RequestExecute, "agent")
		if len(loops) != 1 {
			t.Fatalf("provider received %d loop executes", len(loops))
		}
		var in api.TurnInput
		json.Unmarshal(loops[0].Cmd.Operation.Request.Input, &in)
		got := false
		for _, ev := range in.Events {
			got = got || ev.Sequence == obs
		}
		if in.Input != nil || !got {
			t.Errorf("woken activation input %+v events %+v, want no input and event %d", in.Input, in.Events, obs)
		}
		// The binding's view shows the observation.
		r := s.do("POST", "/v1/sessions/"+id+"/environments", `{"operation":"get","environment":{"name":"box","sequence":1}}`, "Idempotency-Key", key())
		var view envapi.EnvironmentView
		if err := json.Unmarshal(r.Body, &view); err != nil || r.Status != 200 || view.Observation == nil || view.Observation.Code != "lost" || view.ObservedAtMs == 0 {
			t.Errorf("environment view %d %s, want the observation", r.Status, r.Body)
		}
		other := strings.Replace(rep.URL, "/box/1/", "/box/2/", 1)
		if status, _ := postBearer(t, other, rep.Token, []byte(`{"type":"event","event_type":"x","data":null}`)); status != 401 {
			t.Errorf("the token of binding 1 on binding 2 = %d, want 401", status)
		}
		if status, _ := report(rep.Token, map[string]any{"type": "event", "event_type": "turn_ended", "data": nil}); status != 422 {
			t.Errorf("reserved diagnostic = %d, want 422", status)
		}
		if r := s.do("POST", "/v1/sessions/"+id+"/end", "", "Idempotency-Key", key()); r.Status != 200 {
			t.Fatalf("end = %d %s", r.Status, r.Body)
		}
		if status, _ := report(rep.Token, map[string]any{"type": "event", "event_type": "late", "data": nil}); status != 404 {
			t.Errorf("report on a closed binding = %d, want 404", status)
		}
	})
}

// TestEnvironmentCrash (case 34 over environment/v1): SIGKILL while an
// execute is outstanding; after restart the tool is interrupted and
// ambiguous, nothing is sent again and the old callback is closed.
func TestEnvironmentCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := start(t, dir)
	p := newProvider(t)
	id := builtinSession(s, p, tool("stuck", "box", "hang"))
	r := s.do("POST", "/v1/sessions/"+id+"/messages", `{"input":{"message":`+strconv.Quote(toolTurn("stuck"))+`}}`,
		"Idempotency-Key", key(), "Prefer", "respond-async")
	if r.Status != 202 {
		t.Fatalf("submit = %d %s", r.Status, r.Body)
	}
	exec := p.WaitFor(envapi.RequestExecute, "box", 1)[0].Cmd.Operation
	s.kill()
	if !killedBySIGKILL(s.waitErr) {
		t.Fatalf("server ended with %v, want SIGKILL", s.waitErr)
	}

	s2 := start(t, dir)
	if st := s2.summary(id).Status; st != api.StatusIdle {
		t.Fatalf("status after restart = %s, want idle", st)
	}
	evs := s2.events(id)
	started := ofKind(evs, api.KindToolCallStarted)
	if len(started) != 1 || started[0].Sequence != exec.Sequence {
		t.Fatalf("events %v; execute sequence %d", kinds(evs), exec.Sequence)
	}
	end := toolOutcome(t, evs, exec.Sequence)
	if f := failurePayload(end); end.EventType != api.KindToolCallFailed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("tool outcome %s %s, want tool_call_failed interrupted ambiguous", end.EventType, end.Data)
	}
	if af := ofKind(evs, api.KindActivationFailed); len(af) != 1 {
		t.Errorf("events %v", kinds(evs))
	}
	if tf := ofKind(evs, api.KindTurnFailed); len(tf) != 1 || failurePayload(tf[0]).Code != api.FailureInterrupted {
		t.Errorf("turn_failed %+v", tf)
	}
	// The old callback cannot finish the interrupted tool.
	if status, _ := callGrant(t, exec.Request.Callback, s2.URL, "finish", map[string]any{"status": "ok", "value": 1}); status != 401 {
		t.Errorf("finish with the old token after restart = %d, want 401", status)
	}
	if r := s2.send(id, "after the crash"); r.Status != 200 {
		t.Fatalf("send after recovery = %d %s", r.Status, r.Body)
	}
	if n := len(p.Received(envapi.RequestExecute, "")); n != 1 {
		t.Errorf("provider received %d executes, want exactly 1", n)
	}
	if n := len(ofKind(s2.events(id), api.KindToolCallEnded)); n != 0 {
		t.Errorf("%d tool_call_ended after the crash", n)
	}
}
