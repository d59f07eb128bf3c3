package session

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// A failed activation leaves its batch of events pending but starts no
// activation of its own: Brain never retries it automatically. The next
// activation, woken by a newer actionable record or started by a message,
// is handed the pending batch again.
func TestFailedEventActivationIsNotRetried(t *testing.T) {
	var eventRuns atomic.Int64
	var handed [][]uint64
	loops := map[string]agentloop.Func{"flaky": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		var seqs []uint64
		for _, ev := range in.Events {
			seqs = append(seqs, ev.Sequence)
		}
		handed = append(handed, seqs) // activations run one at a time
		if in.Input == nil && eventRuns.Add(1) == 1 {
			return api.TurnOutput{}, errors.New("the first event activation fails")
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops), IdleTTL: KeepIdle}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("flaky")
	id := h.create(req)
	ctx := context.Background()
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	observe := func() uint64 { return h.reportLost(id, binding) }
	first := observe()
	h.waitEvent(id, first, api.KindActivationFailed)
	// Many coalescing windows pass without another activation.
	time.Sleep(60 * CoalesceWindow)
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindActivationStarted)); n != 1 {
		t.Fatalf("%d activations after one failed event activation, want 1: %v", n, kinds(recs))
	}
	// A newer observation wakes the loop, which gets both.
	second := observe()
	h.waitEvent(id, second, api.KindActivationEnded)
	// A message after that finds nothing pending.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	want := [][]uint64{{first}, {first, second}, nil}
	if !reflect.DeepEqual(handed, want) {
		t.Fatalf("activations were handed %v, want %v", handed, want)
	}
}

// A message after a failed event activation is handed the batch it left
// pending.
func TestMessageGetsBatchOfFailedActivation(t *testing.T) {
	var handed [][]uint64
	fail := true
	loops := map[string]agentloop.Func{"flaky": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		var seqs []uint64
		for _, ev := range in.Events {
			seqs = append(seqs, ev.Sequence)
		}
		handed = append(handed, seqs)
		if fail {
			fail = false
			return api.TurnOutput{}, errors.New("the first activation fails")
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops), IdleTTL: KeepIdle}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("flaky")
	id := h.create(req)
	ctx := context.Background()
	seq := h.reportLost(id, api.EnvironmentRef{Name: "box", Sequence: 1})
	h.waitEvent(id, seq, api.KindActivationFailed)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if want := [][]uint64{{seq}, {seq}}; !reflect.DeepEqual(handed, want) {
		t.Fatalf("activations were handed %v, want %v", handed, want)
	}
}

// The rule outlives passivation: a failed event activation's batch is not
// retried by a session that left memory meanwhile and is woken by
// something that is no newer actionable record (a replace, which wakes
// the loop when it is done).
func TestFailedEventActivationIsNotRetriedAfterPassivation(t *testing.T) {
	var runs atomic.Int64
	loops := map[string]agentloop.Func{"flaky": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		if in.Input == nil && runs.Add(1) == 1 {
			return api.TurnOutput{}, errors.New("the first event activation fails")
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Environments[0].Methods = replaceMethods
	req.Agentloop = testLoop("flaky")
	id := h.create(req)
	ctx := context.Background()
	seq := h.reportLost(id, api.EnvironmentRef{Name: "box", Sequence: 1})
	h.waitEvent(id, seq, api.KindActivationFailed)
	for deadline := time.Now().Add(10 * time.Second); h.engine.Active() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the session was not passivated after its failed activation")
		}
	}
	if _, err := h.engine.CallEnvironment(ctx, id, "box", "reset", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	after := uint64(len(h.records(id)))
	time.Sleep(CoalesceWindow + 150*time.Millisecond)
	if started := ofKind(h.records(id)[after:], api.KindActivationStarted); len(started) != 0 || runs.Load() != 1 {
		t.Fatalf("the failed batch was retried after the replace: %v", kinds(h.records(id)))
	}
	h.noActivationAfter(id, after, "after a replace")
}

// reportLost reports an actionable observation (resource r lost) from
// binding of session id, and answers its sequence.
func (h *harness) reportLost(id string, binding api.EnvironmentRef) uint64 {
	h.t.Helper()
	seq, err := h.engine.Report(context.Background(), id, binding, Report{Type: ReportResult,
		Output: json.RawMessage(`{"observation":{"scope":"resource","resource":"r","code":"lost","message":"m"}}`)})
	if err != nil {
		h.t.Fatal(err)
	}
	return seq
}
