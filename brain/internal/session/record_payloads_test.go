package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// tool_call_started names the tool, the invocation and its input, the
// environment it goes to and the deadline handed to the call: the
// shipped 120 s, a configured one, or none when tool calls are unbounded.
func TestToolCallStartedPayload(t *testing.T) {
	configured := DefaultLimits()
	configured.MaxTool = 7 * time.Second
	for name, c := range map[string]struct {
		limits   Limits
		deadline *int64
	}{
		"default":    {DefaultLimits(), ptr(int64(120000))},
		"configured": {configured, ptr(int64(7000))},
		"unbounded":  {Limits{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Config{Limits: c.limits}, map[string]string{"box": "echo"})
			id := h.create(toolSession("echo"))
			if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{
				"tool_calls": []map[string]any{{"name": "echo", "input": map[string]int{"n": 7}}}})}); err != nil {
				t.Fatal(err)
			}
			recs := h.records(id)
			started := ofKind(recs, api.KindToolCallStarted)
			if len(started) != 1 {
				t.Fatalf("records = %v", kinds(recs))
			}
			p := decode[toolCallStarted](t, started[0].Data)
			activation := ofKind(recs, api.KindActivationStarted)[0].Sequence
			if p.Name != "echo" || p.CallID != "call_1" || string(p.Input) != `{"n":7}` || p.Environment != "box" ||
				p.Binding != 1 || p.Activation != activation {
				t.Fatalf("tool_call_started = %+v", p)
			}
			if (p.DeadlineMs == nil) != (c.deadline == nil) || (p.DeadlineMs != nil && *p.DeadlineMs != *c.deadline) {
				t.Fatalf("tool_call_started deadline_ms = %v, want %v", deref(p.DeadlineMs), deref(c.deadline))
			}
			// The delivered execute carries the recorded deadline.
			if ex := h.envs.opsOf(envapi.RequestExecute); len(ex) != 1 || deref(ex[0].Request.DeadlineMs) != deref(c.deadline) {
				t.Fatalf("execute = %+v", ex)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// environment_*_started records name the environment, its binding and
// carry the request delivered: a setup with its configuration and the
// detach of End.
func TestEnvironmentStartedPayload(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Environments[0].Configuration = json.RawMessage(`{"image":"x"}`)
	id := h.create(req)
	if _, err := h.engine.End(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	for kind, want := range map[string]envapi.RequestType{
		api.KindEnvironmentSetupStarted:  envapi.RequestSetup,
		api.KindEnvironmentDetachStarted: envapi.RequestDetach,
	} {
		rs := ofKind(recs, kind)
		if len(rs) != 1 {
			t.Fatalf("%d %s records in %v", len(rs), kind, kinds(recs))
		}
		p := decode[envStarted](t, rs[0].Data)
		if p.Environment != "box" || p.Binding != (api.EnvironmentRef{Name: "box", Sequence: 1}) || p.Request.Type != want {
			t.Fatalf("%s = %+v", kind, p)
		}
		if want == envapi.RequestSetup && string(p.Request.Configuration) != `{"image":"x"}` {
			t.Fatalf("%s configuration = %s", kind, p.Request.Configuration)
		}
		// The request recorded is the one delivered, under that sequence.
		ops := h.envs.opsOf(want)
		if len(ops) != 1 || ops[0].Sequence != rs[0].Sequence || string(mustJSON(ops[0].Request)) != string(mustJSON(p.Request)) {
			t.Fatalf("%s delivered %+v", kind, ops)
		}
	}
}
