package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

func TestTurnEndRelease(t *testing.T) {
	dir := t.TempDir()
	b, err := startInProcess(dir, brain.Limits{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			b.close()
		}
	})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", &bindingConf{Setup: "release", Release: "hold"})}}).SessionID
	evs := c.events(id)
	if ended := ofKind(evs, api.KindEnvironmentSetupEnded); len(ended) != 1 || !strings.Contains(string(ended[0].Data), `"on_turn_end":"release"`) {
		t.Fatalf("setup receipt not recorded: %s", kindsLine(evs))
	}

	// case 51: the answer is saved and returned before the release call
	// is answered.
	status, body := c.send(id, "hello")
	if status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	call := f.waitFor(envapi.RequestCall, 1)[0]
	turn := ofKind(c.events(id), api.KindTurnStarted)[0]
	req := call.Cmd.Operation.Request
	if req.Name != "release" || string(req.Input) != `{"sequence":`+jsonNum(turn.Sequence)+`}` {
		t.Fatalf("release call %+v", req)
	}
	evs = c.events(id)
	ended := ofKind(evs, api.KindTurnEnded)
	started := ofKind(evs, api.KindEnvironmentCallStarted)
	if len(ended) != 1 || len(started) != 1 || started[0].Sequence < ended[0].Sequence || len(ofKind(evs, api.KindEnvironmentCallEnded)) != 0 {
		t.Fatalf("release before the answer, or already answered: %s", kindsLine(evs))
	}
	if started[0].Sequence != call.Cmd.Operation.Sequence {
		t.Errorf("release operation %d, journal %d", call.Cmd.Operation.Sequence, started[0].Sequence)
	}
	f.Open("release")
	c.waitEvent(id, ofType(api.KindEnvironmentCallEnded))

	// A failed turn is released too, and a failing release changes
	// nothing about the turn.
	status, _ = c.send(id, script(map[string]any{"fail": map[string]any{"code": "boom", "message": "scripted failure"}}))
	if status == http.StatusOK {
		t.Fatal("scripted failure succeeded")
	}
	f.waitFor(envapi.RequestCall, 2)
	c.waitEvent(id, func(ev api.Event) bool {
		return ev.EventType == api.KindEnvironmentCallEnded && ev.Sequence > started[0].Sequence+3
	})
	if n := len(ofKind(c.events(id), api.KindTurnFailed)); n != 1 {
		t.Fatalf("turn_failed %d", n)
	}

	// Graceful drain waits for a pending release.
	f.Hold("release")
	if status, body := c.send(id, "third"); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	third := f.waitFor(envapi.RequestCall, 3)[2]
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- b.srv.Close(ctx)
	}()
	// Wait until the drain has begun, then let the release finish.
	for {
		st, _ := c.do(http.MethodGet, "/health/ready", nil, nil)
		if st == http.StatusServiceUnavailable {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Close returned (%v) while a release was pending", err)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	f.Open("release")
	if err := <-done; err != nil {
		t.Fatalf("drain: %v", err)
	}
	b.close()
	closed = true
	b2 := openBrain(t, dir, brain.Limits{})
	c2 := newClient(t, b2.URL)
	c2.waitEvent(id, withData(api.KindEnvironmentCallEnded, "sequence", third.Cmd.Operation.Sequence))
	if n := len(ofKind(c2.events(id), api.KindEnvironmentCallFailed)); n != 0 {
		t.Errorf("release recorded as failed %d times", n)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestControl(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := newFixture(t)
	tmpl := f.env("tmpl", &bindingConf{})
	tmpl.Configuration = json.RawMessage(`{"size":1}`)
	tmpl.Lifecycle = api.LifecycleManual
	tmpl.Template = &api.EnvironmentTemplate{MaxInstances: 2,
		ConfigurationSchema: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","minimum":1}},"additionalProperties":false}`)}
	ctl := tool("ctl", "box", "control")
	ctl.Environments = []api.EnvironmentGrant{{Environment: "box", Permissions: []string{"read", "call"}, Methods: []string{"inspect"}}}
	// A template whose own configuration does not match its schema is
	// refused with the create, not with every later instance.
	bad := tmpl
	bad.Configuration = json.RawMessage(`{"size":0}`)
	var refused api.ApiError
	c.must(http.StatusUnprocessableEntity, http.MethodPost, "/v1/sessions",
		api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "e2e"}, Environments: []api.Environment{bad}, Tools: []api.Tool{}}, &refused)
	if refused.Code != api.CodeInvalidRequest || !strings.Contains(refused.Message, "configuration_schema") {
		t.Errorf("create with a template configuration its schema refuses = %+v, want invalid_request naming the schema", refused)
	}
	id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil), tmpl}, Tools: []api.Tool{ctl}}).SessionID
	control := func(want int, req map[string]any, out any) []byte {
		t.Helper()
		return c.must(want, http.MethodPost, "/v1/sessions/"+id+"/environments", req, out)
	}

	var view envapi.EnvironmentView
	control(http.StatusOK, map[string]any{"operation": "create", "template": "tmpl", "name": "inst", "configuration": map[string]any{"size": 2}}, &view)
	if view.Template != "tmpl" || view.State != envapi.StateDeclared || view.Reference.Name != "inst" || view.Reference.Sequence <= 1 ||
		string(view.Configuration) != `{"size":2}` {
		t.Fatalf("created %+v", view)
	}
	ref := view.Reference
	control(http.StatusConflict, map[string]any{"operation": "create", "template": "tmpl", "name": "inst2"}, nil)
	control(http.StatusUnprocessableEntity, map[string]any{"operation": "update", "environment": ref, "configuration": map[string]any{"size": "big"}}, nil)
	control(http.StatusOK, map[string]any{"operation": "update", "environment": ref, "configuration": map[string]any{"size": 3}}, &view)
	if string(view.Configuration) != `{"size":3}` {
		t.Fatalf("updated %+v", view)
	}
	control(http.StatusOK, map[string]any{"operation": "setup", "environment": ref}, &view)
	if view.State != envapi.StateReady {
		t.Fatalf("setup %+v", view)
	}
	setups := f.received(envapi.RequestSetup)
	last := setups[len(setups)-1]
	if op := last.Cmd.Operation; op.Environment != "inst" || op.Template != "tmpl" || string(op.Configuration) != `{"size":3}` ||
		*op.Binding != envapi.EnvironmentRef(ref) || last.Auth != "Bearer "+providerToken {
		t.Fatalf("instance setup %+v auth %q", op, last.Auth)
	}
	control(http.StatusConflict, map[string]any{"operation": "update", "environment": ref, "configuration": map[string]any{"size": 4}}, nil)

	// The call route answers {output}.
	var out struct {
		Output map[string]json.RawMessage `json:"output"`
	}
	c.must(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/environments/inst/calls/inspect", map[string]any{"input": map[string]int{"a": 1}}, &out)
	if string(out.Output["input"]) != `{"a":1}` {
		t.Fatalf("call output %+v", out)
	}
	calls := f.received(envapi.RequestCall)
	if n := len(calls); n != 1 || calls[0].Cmd.Operation.Request.Name != "inspect" {
		t.Fatalf("calls %+v", calls)
	}
	if len(ofKind(c.events(id), api.KindEnvironmentCallEnded)) != 1 {
		t.Fatalf("call not journaled: %s", kindsLine(c.events(id)))
	}
	// An input that is not UTF-8 is refused before anything is sent.
	if status, body := c.do(http.MethodPost, "/v1/sessions/"+id+"/environments/inst/calls/inspect", []byte(`{"input":{"a":"`+"\xff"+`"}}`), nil); status != http.StatusBadRequest {
		t.Fatalf("a call whose input is not UTF-8: %d %s, want 400", status, body)
	}
	if n := len(f.received(envapi.RequestCall)); n != 1 {
		t.Fatalf("%d calls reached the provider, want 1: the one whose input is not UTF-8 was sent", n)
	}
	if status, body := c.do(http.MethodPost, "/v1/sessions/"+id+"/environments/inst/calls/nosuch", map[string]any{"input": nil}, nil); status < 400 {
		t.Fatalf("undeclared method: %d %s", status, body)
	}
	if status, _ := c.do(http.MethodPost, "/v1/sessions/"+id+"/environments/inst/calls/inspect", map[string]any{"input": nil}, map[string]string{"Idempotency-Key": ""}); status != http.StatusBadRequest {
		t.Fatalf("call without a key: %d", status)
	}

	// Delete tears the instance down; the old reference stops working.
	control(http.StatusOK, map[string]any{"operation": "delete", "environment": ref}, &view)
	if view.State != envapi.StateDeleted || len(f.received(envapi.RequestTeardown)) != 1 {
		t.Fatalf("deleted %+v", view)
	}
	control(http.StatusOK, map[string]any{"operation": "create", "template": "tmpl", "name": "inst"}, &view)
	if view.Reference.Sequence <= ref.Sequence {
		t.Fatalf("recreated with reference %+v", view.Reference)
	}
	control(http.StatusNotFound, map[string]any{"operation": "get", "environment": ref}, nil)

	// A tool's environments service is bounded by the tool's grants.
	if status, body := c.send(id, toolCalls("ctl")); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	evs := c.events(id)
	o, isErr := outcome(t, evs, ofKind(evs, api.KindToolCallStarted)[0].Sequence)
	if isErr {
		t.Fatalf("control tool failed: %+v %+v", o, o.Error)
	}
	var res struct {
		List struct {
			Environments []envapi.EnvironmentView `json:"environments"`
		} `json:"list"`
		Call   map[string]json.RawMessage `json:"call"`
		Denied string                     `json:"denied"`
		Hidden string                     `json:"hidden"`
	}
	if err := json.Unmarshal(o.Value, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.List.Environments) != 1 || res.List.Environments[0].Reference.Name != "box" {
		t.Errorf("a tool granted read on box listed %+v", res.List.Environments)
	}
	if string(res.Call["input"]) != `{"from":"tool"}` {
		t.Errorf("granted call answered %+v", res.Call)
	}
	if !strings.Contains(res.Denied, "not_granted") && !strings.Contains(res.Denied, "403") {
		t.Errorf("ungranted method: %q", res.Denied)
	}
	if res.Hidden == "" {
		t.Errorf("an ungranted environment was readable")
	}
}
