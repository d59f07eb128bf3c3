package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// An interrupt holds automatic activations back until the next message,
// also once the session is passivated (its projection kept in memory, or
// dropped and folded again from the journal) and after a restart:
// observations reported meanwhile wait, and the next message's activation
// gets them all.
func TestInterruptOutlivesPassivation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		released int64
	}{{"kept projection", 0}, {"folded from the journal", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			inputs := make(chan api.TurnInput, 8)
			loops := testLoops(map[string]agentloop.Func{"watch": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
				inputs <- in
				return api.TurnOutput{}, nil
			}})
			cfg := Config{Loops: loops, ReleasedBytes: tc.released}
			envs := map[string]string{"box": "echo"}
			h := newHarness(t, cfg, envs)
			req := toolSession("echo")
			req.Agentloop = testLoop("watch")
			id := h.create(req)
			ctx := context.Background()
			if err := h.engine.Interrupt(ctx, id); err != nil {
				t.Fatal(err)
			}
			binding := api.EnvironmentRef{Name: "box", Sequence: 1}
			observe := func(h *harness, what string) uint64 {
				t.Helper()
				seq, err := h.engine.Report(ctx, id, binding, Report{Type: ReportResult,
					Output: json.RawMessage(`{"observation":{"scope":"resource","resource":"vol-1","code":"lost","message":"` + what + `"},"content":"` + what + `"}`)})
				if err != nil {
					t.Fatal(err)
				}
				return seq
			}
			quiet := func(h *harness, after uint64, when string) {
				t.Helper()
				h.noActivationAfter(id, after, when)
				select {
				case in := <-inputs:
					t.Fatalf("%s: the loop ran with %+v", when, in)
				default:
				}
			}
			quiet(h, 0, "after the interrupt")
			first := observe(h, "first")
			quiet(h, first-1, "passivated")

			h.close()
			h = openHarness(t, h.dir, cfg, envs)
			second := observe(h, "second")
			quiet(h, second-1, "restarted")

			if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "what happened?"}); err != nil {
				t.Fatal(err)
			}
			in := <-inputs
			if in.Input == nil || len(in.Events) != 2 || in.Events[0].Sequence != first || in.Events[1].Sequence != second {
				t.Fatalf("the message's activation got input %+v and events %+v, want both observations", in.Input, in.Events)
			}
			// The message lifted the hold: an observation wakes the loop.
			third := observe(h, "third")
			h.waitEvent(id, third, api.KindActivationEnded)
			if in := <-inputs; in.Input != nil || len(in.Events) != 1 || in.Events[0].Sequence != third {
				t.Fatalf("woken loop input: input %+v, events %+v", in.Input, in.Events)
			}
		})
	}
}

// noActivationAfter asserts that the session is passivated and that no
// activation starts after record after within far more than the
// coalescing window.
func (h *harness) noActivationAfter(id string, after uint64, when string) {
	h.t.Helper()
	if n := h.engine.Active(); n != 0 {
		h.t.Fatalf("%s: %d sessions in memory, want the session passivated", when, n)
	}
	time.Sleep(CoalesceWindow + 150*time.Millisecond)
	for _, r := range h.records(id)[after:] {
		if r.Kind == api.KindActivationStarted {
			h.t.Fatalf("%s: an activation started at %d without a message: %v", when, r.Sequence, kinds(h.records(id)))
		}
	}
}
