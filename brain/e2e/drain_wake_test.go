package e2e

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
)

// TestDrainDeliversBackgroundResult: a tool that returned during a turn
// finishes while the server drains. Its result wakes the loop as it does
// outside a drain: the drain runs that activation to its end before it
// finishes, so that after a restart the journal holds the activation
// handed the tool's outcome and nothing of it is left pending.
func TestDrainDeliversBackgroundResult(t *testing.T) {
	b := newBrain(t, brain.Limits{})
	c := newClient(t, b.URL)
	f := newFixture(t)
	id := c.create(api.CreateSessionRequest{Environments: []api.Environment{f.env("box", nil)},
		Tools: []api.Tool{tool("later", "box", "returned")}}).SessionID
	if status, body := c.send(id, toolCalls("later")); status != http.StatusOK {
		t.Fatalf("send = %d %s", status, body)
	}
	started := ofKind(c.events(id), api.KindToolCallStarted)
	if len(started) != 1 {
		t.Fatalf("tool calls started: %d", len(started))
	}

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		b.Stop()
	}()
	// The drain has begun once readiness is refused; the engine stops
	// admitting work right after.
	for {
		if status, _ := c.do(http.MethodGet, "/health/ready", nil, nil); status == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case <-drained:
		t.Fatal("the drain ended while a tool that returned was still open")
	default:
	}

	f.Open("finish")
	select {
	case err := <-f.later:
		if err != nil {
			t.Fatalf("finish during the drain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the tool did not finish")
	}
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not end")
	}

	again := openBrain(t, b.Dir, brain.Limits{})
	evs := newClient(t, again.URL).events(id)
	ended := ofKind(evs, api.KindToolCallEnded)
	if len(ended) != 1 {
		t.Fatalf("tool_call_ended records: %d in %s", len(ended), kindsLine(evs))
	}
	var woke *api.Event
	for i, ev := range evs {
		if ev.EventType == api.KindActivationStarted && slices.Contains(dataField[[]uint64](t, ev, "events"), ended[0].Sequence) {
			woke = &evs[i]
		}
	}
	if woke == nil {
		t.Fatalf("no activation was handed the result finished during the drain: %s", kindsLine(evs))
	}
	if end := ofKind(evs, api.KindActivationEnded); len(end) == 0 || dataField[uint64](t, end[len(end)-1], "sequence") != woke.Sequence {
		t.Fatalf("the activation at %d did not end: %s", woke.Sequence, kindsLine(evs))
	}
	if n := count(evs, api.KindActivationFailed); n != 0 {
		t.Fatalf("%d activations failed: %s", n, kindsLine(evs))
	}
}
