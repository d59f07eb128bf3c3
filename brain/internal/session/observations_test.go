package session

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An environment-scope observation sets its binding's availability; a
// resource-scope observation (a lost resource) is recorded as the
// binding's latest observation but leaves that availability as it was,
// in the live session and in a fold of its journal.
func TestResourceObservationKeepsAvailability(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	// No automatic activation runs between the reports.
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	ref := envapi.EnvironmentRef(binding)
	observe := func(observation string) {
		t.Helper()
		if _, err := h.engine.Report(ctx, id, binding, Report{Type: ReportResult,
			Output: json.RawMessage(`{"observation":` + observation + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	view := func(e *Engine) envapi.EnvironmentView {
		t.Helper()
		raw, err := e.Control(ctx, id, envapi.ControlRequest{Operation: envapi.ControlGet, Environment: &ref})
		if err != nil {
			t.Fatal(err)
		}
		return decode[envapi.EnvironmentView](t, raw)
	}
	if v := view(h.engine); v.Availability != "" {
		t.Fatalf("availability %q before any observation", v.Availability)
	}
	observe(`{"scope":"environment","availability":"unavailable","message":"host draining"}`)
	if v := view(h.engine); v.Availability != envapi.Unavailable {
		t.Fatalf("environment-scope observation: availability %q, want %q", v.Availability, envapi.Unavailable)
	}
	observe(`{"scope":"resource","resource":"vol-1","code":"lost","message":"volume gone"}`)
	check := func(e *Engine, when string) {
		t.Helper()
		v := view(e)
		if v.Availability != envapi.Unavailable {
			t.Fatalf("%s: availability %q after a resource observation, want %q kept", when, v.Availability, envapi.Unavailable)
		}
		if v.Observation == nil || v.Observation.Scope != envapi.ScopeResource || v.Observation.Code != "lost" || v.Observation.Resource != "vol-1" {
			t.Fatalf("%s: latest observation %+v, want the resource one", when, v.Observation)
		}
		if v.State != envapi.StateReady {
			t.Fatalf("%s: state %q after a resource observation", when, v.State)
		}
	}
	check(h.engine, "live")
	h.close()
	check(openHarness(t, h.dir, Config{}, map[string]string{"box": "echo"}).engine, "folded from the journal")
}

// An actionable observation wakes a loop that never sets its transcript:
// the loop sees the observation among its events, without user input,
// and the session's transcript is neither edited nor replaced.
func TestObservationDoesNotEditTranscript(t *testing.T) {
	inputs := make(chan api.TurnInput, 4)
	loops := map[string]agentloop.Func{"quiet": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		inputs <- in
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("quiet")
	req.Transcript = []api.Message{
		api.UserMessage(api.UserInput{Message: "remember the volume"}),
		{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock("noted")}},
	}
	id := h.create(req)
	ctx := context.Background()
	before, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Messages) != 2 {
		t.Fatalf("initial transcript has %d messages", len(before.Messages))
	}
	seq, err := h.engine.Report(ctx, id, api.EnvironmentRef{Name: "box", Sequence: 1}, Report{Type: ReportResult,
		Output: json.RawMessage(`{"observation":{"scope":"resource","resource":"vol-1","code":"lost","message":"volume gone"},"content":"the volume is gone"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, seq, api.KindActivationEnded)
	in := <-inputs
	if in.Input != nil || len(in.Events) != 1 || in.Events[0].Sequence != seq || in.Events[0].EventType != api.KindOutputEmitted {
		t.Fatalf("woken loop input: input %+v, events %+v", in.Input, in.Events)
	}
	recs := h.records(id)
	if recs[seq-1].Sequence != seq {
		t.Fatalf("record %d is at index %d", recs[seq-1].Sequence, seq-1)
	}
	for _, r := range recs[seq-1:] {
		if r.Kind == api.KindTranscriptDelta || r.Kind == api.KindTranscriptReplaced {
			t.Fatalf("record %d is %s after the observation: %v", r.Sequence, r.Kind, kinds(recs))
		}
	}
	after, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after.Messages, before.Messages) {
		t.Fatalf("transcript changed:\nbefore %+v\nafter  %+v", before.Messages, after.Messages)
	}
}
