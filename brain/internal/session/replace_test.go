package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

var replaceMethods = map[string]api.EnvironmentMethod{
	"reset": {Description: "reset", Effect: "replace", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

// A method with effect "replace" needs idle execution, cannot be used by
// an extension on its own or the bootstrap environment, and starts a new
// incarnation of the binding.
func TestReplaceMethod(t *testing.T) {
	ctx := context.Background()
	loops := map[string]agentloop.Func{"ctl": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		codes := map[string]string{}
		for _, env := range []string{"box", "other"} {
			_, err := svc.(Services).Call(ctx, "environments", json.RawMessage(
				`{"operation":"call","environment":{"name":"`+env+`","sequence":1},"method":"reset","input":{}}`))
			codes[env] = Code(err)
		}
		return api.TurnOutput{Result: mustJSON(codes)}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo", "other": "echo"})
	loop := testLoop("ctl")
	loop.Environment = "box"
	loop.Environments = []api.EnvironmentGrant{
		{Environment: "box", Permissions: []string{"call"}}, {Environment: "other", Permissions: []string{"call", "read"}},
	}
	id := h.create(api.CreateSessionRequest{Agentloop: loop, Environments: []api.Environment{
		{Name: "box", Driver: api.DriverBrain, Methods: replaceMethods},
		{Name: "other", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1", Methods: replaceMethods},
	}})
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	codes := decode[map[string]string](t, decode[turnEnded](t, ofKind(h.records(id), api.KindTurnEnded)[0].Data).Result)
	if codes["box"] != api.CodeNotGranted || codes["other"] != api.CodeConflict {
		t.Fatalf("replace from the loop: %v, want box not_granted (bootstrap) and other conflict (not idle)", codes)
	}
	if n := len(h.envs.opsOf(envapi.RequestCall)); n != 0 {
		t.Fatalf("%d calls sent for refused replaces", n)
	}

	// Idle, the operator replaces other: a new incarnation.
	old := api.EnvironmentRef{Name: "other", Sequence: 1}
	if _, err := h.engine.Report(ctx, id, old, Report{Type: ReportEvent, EventType: "before"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlCall, Environment: (*envapi.EnvironmentRef)(&old),
		Method: "reset", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	replaced := ofKind(h.records(id), kindEnvironmentReplaced)
	if len(replaced) != 1 {
		t.Fatalf("no _environment_replaced record")
	}
	if _, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: (*envapi.EnvironmentRef)(&old)}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old reference after replace: %v", err)
	}
	if _, err := h.engine.Report(ctx, id, old, Report{Type: ReportEvent, EventType: "after"}); !errors.Is(err, ErrExecutionClosed) {
		t.Fatalf("old reporter after replace: %v", err)
	}
	fresh := api.EnvironmentRef{Name: "other", Sequence: replaced[0].Sequence}
	raw, err := h.engine.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: (*envapi.EnvironmentRef)(&fresh)})
	if err != nil {
		t.Fatal(err)
	}
	if v := decode[envapi.EnvironmentView](t, raw); v.State != envapi.StateReady || v.Reference.Sequence != fresh.Sequence {
		t.Fatalf("replaced view %+v", v)
	}
	if _, err := h.engine.Report(ctx, id, fresh, Report{Type: ReportEvent, EventType: "after"}); err != nil {
		t.Fatalf("new reporter: %v", err)
	}

	// While a tool runs, even the operator cannot replace.
	h2 := newHarness(t, Config{}, map[string]string{"box": "hang"})
	req := toolSession("hang")
	req.Environments[0].Methods = replaceMethods
	id2 := h2.create(req)
	if _, err := h2.engine.Submit(ctx, id2, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{}}}})}); err != nil {
		t.Fatal(err)
	}
	h2.waitEvent(id2, 0, api.KindToolCallStarted)
	_, err = h2.engine.CallEnvironment(ctx, id2, "box", "reset", json.RawMessage(`{}`))
	if Code(err) != api.CodeConflict {
		t.Fatalf("replace while a tool runs: %v", err)
	}
	if err := h2.engine.Interrupt(ctx, id2); err != nil {
		t.Fatal(err)
	}
}

// An unknown teardown keeps the instance's capacity reserved and the
// operation pending until an operation-scope observation resolves it.
func TestUnknownOperationKeepsCapacity(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{}, map[string]string{"tmpl": "echo", "i1": "unknownteardown", "i2": "echo"})
	id := h.create(api.CreateSessionRequest{Environments: []api.Environment{{Name: "tmpl", Driver: api.DriverHTTP, URL: "http://127.0.0.1:1",
		Template: &api.EnvironmentTemplate{MaxInstances: 2}}}})
	control := func(req envapi.ControlRequest) (envapi.EnvironmentView, error) {
		raw, err := h.engine.Control(ctx, id, req)
		if err != nil {
			return envapi.EnvironmentView{}, err
		}
		return decode[envapi.EnvironmentView](t, raw), nil
	}
	v, err := control(envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "i1"})
	if err != nil || v.State != envapi.StateReady {
		t.Fatalf("create i1: %+v %v", v, err)
	}
	ref := v.Reference
	if _, err := control(envapi.ControlRequest{Operation: envapi.ControlDelete, Environment: &ref}); Code(err) != api.CodeExecutorFailed {
		t.Fatalf("unknown teardown answered %v", err)
	}
	teardown := ofKind(h.records(id), api.KindEnvironmentTeardownStarted)[0].Sequence
	v, err = control(envapi.ControlRequest{Operation: envapi.ControlGet, Environment: &ref})
	if err != nil || v.State != envapi.StateUnknown || v.PendingOperation == nil || *v.PendingOperation != teardown {
		t.Fatalf("after an unknown teardown: %+v %v", v, err)
	}
	if _, err := control(envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "i2"}); Code(err) != api.CodeConflict {
		t.Fatalf("capacity of an unknown instance was released: %v", err)
	}
	binding := api.EnvironmentRef(ref)
	observe := func(seq uint64, status string) {
		t.Helper()
		out := `{"observation":{"scope":"operation","sequence":` + jsonNum(seq) + `,"resolution":{"status":"` + status + `"}}}`
		if _, err := h.engine.Report(ctx, id, binding, Report{Type: ReportResult, Output: json.RawMessage(out)}); err != nil {
			t.Fatal(err)
		}
	}
	// An observation naming another operation resolves nothing.
	observe(teardown-1, "deleted")
	if v, _ := control(envapi.ControlRequest{Operation: envapi.ControlGet, Environment: &ref}); v.State != envapi.StateUnknown {
		t.Fatalf("uncorrelated resolution changed the binding: %+v", v)
	}
	observe(teardown, "deleted")
	v, err = control(envapi.ControlRequest{Operation: envapi.ControlGet, Environment: &ref})
	if err != nil || v.State != envapi.StateDeleted || v.PendingOperation != nil {
		t.Fatalf("after the resolution: %+v %v", v, err)
	}
	if _, err := control(envapi.ControlRequest{Operation: envapi.ControlCreate, Template: "tmpl", Name: "i2"}); err != nil {
		t.Fatalf("capacity not released by the resolution: %v", err)
	}
}

func jsonNum(n uint64) string { return string(mustJSON(n)) }
