package session

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// An event activation that fails while more results are pending than one
// activation is handed (api.MaxPageEvents) starts nothing itself either:
// the results it was not handed were pending when it started, so they do
// not wake the loop again. Brain does not retry the failed activation in
// a loop; the next message is handed the pending results, and once an
// activation succeeds, the rest wakes the loop.
func TestFailedActivationOverFullBatchIsNotRetried(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	eventFails := true
	var handed [][]uint64
	handedNow := func() [][]uint64 {
		mu.Lock()
		defer mu.Unlock()
		return append([][]uint64(nil), handed...)
	}
	loops := map[string]agentloop.Func{"backlog": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		var seqs []uint64
		for _, ev := range in.Events {
			seqs = append(seqs, ev.Sequence)
		}
		mu.Lock()
		handed = append(handed, seqs)
		fails := eventFails
		mu.Unlock()
		if in.Input != nil && in.Input.Message == "hold" {
			<-release
			return api.TurnOutput{}, nil
		}
		if in.Input == nil && fails {
			return api.TurnOutput{}, errors.New("the model is down")
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops), IdleTTL: KeepIdle}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("backlog")
	id := h.create(req)
	ctx := context.Background()
	turn, err := h.engine.Submit(ctx, id, api.UserInput{Message: "hold"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, turn, api.KindActivationStarted)
	// Results pile up while the turn runs: more than one activation is
	// handed.
	binding := api.EnvironmentRef{Name: "box", Sequence: 1}
	var results []uint64
	for range api.MaxPageEvents + 10 {
		results = append(results, h.reportLost(id, binding))
	}
	close(release)
	failedAct := h.waitEvent(id, turn, api.KindActivationFailed)
	// Many coalescing windows pass without another activation.
	time.Sleep(60 * CoalesceWindow)
	recs := h.records(id)
	if n := len(ofKind(recs, api.KindActivationFailed)); n != 1 {
		t.Fatalf("%d failed activations after one event activation failed, want 1 (it was retried)", n)
	}
	if got := ofKind(recs, api.KindActivationStarted); got[len(got)-1].Sequence > failedAct.Sequence {
		t.Fatalf("an activation started after the failed one without a message or a newer result")
	}
	// A message is handed the first page of pending results again; once
	// it succeeds, the rest wakes the loop.
	mu.Lock()
	eventFails = false
	mu.Unlock()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "go on"}); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(id, results[len(results)-1], api.KindActivationEnded)
	deadline := time.Now().Add(10 * time.Second)
	for len(handedNow()) < 4 && time.Now().Before(deadline) {
		time.Sleep(CoalesceWindow)
	}
	time.Sleep(60 * CoalesceWindow)
	got := handedNow()
	if len(got) != 4 {
		t.Fatalf("%d activations, want 4 (turn, failed event activation, message, rest)", len(got))
	}
	page := results[:api.MaxPageEvents]
	for i, want := range [][]uint64{nil, page, page, results[api.MaxPageEvents:]} {
		if len(got[i]) != len(want) || len(want) > 0 && (got[i][0] != want[0] || got[i][len(want)-1] != want[len(want)-1]) {
			t.Errorf("activation %d was handed %d results, want %d (%v...)", i, len(got[i]), len(want), want[:min(len(want), 1)])
		}
	}
}
