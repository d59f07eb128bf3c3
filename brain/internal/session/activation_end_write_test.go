package session

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// An activation woken by an event whose end cannot be written is not run
// again by itself on the same events once writes succeed again: as a
// reload from the journal would, the session closes it as failed
// (interrupted, ambiguous, with the write failure as its message) and
// holds automatic activations back until the next message, which is
// handed the events again.
func TestEventActivationEndNotWritten(t *testing.T) {
	var runs atomic.Int64
	handed := make(chan []uint64, 8)
	loops := map[string]agentloop.Func{"count": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		runs.Add(1)
		var seqs []uint64
		for _, ev := range in.Events {
			seqs = append(seqs, ev.Sequence)
		}
		handed <- seqs
		return api.TurnOutput{}, nil
	}}
	store := &failOnce{kind: api.KindActivationEnded}
	h := wrappedHarness(t, Config{IdleTTL: KeepIdle, Loops: testLoops(loops)}, map[string]string{"box": "echo"},
		func(fs journal.Store) journal.Store { store.Store = fs; return store })
	req := toolSession("echo")
	req.Agentloop = testLoop("count")
	id := h.create(req)
	ctx := context.Background()

	observed := h.reportLost(id, api.EnvironmentRef{Name: "box", Sequence: 1})
	// What follows the activation whose end was lost: its close, or
	// another activation.
	sub, err := h.engine.Subscribe(ctx, id, observed, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var next api.Event
	for next.EventType != api.KindActivationFailed && next.EventType != api.KindActivationEnded {
		f, err := sub.Next(wctx)
		if err != nil {
			t.Fatalf("after the activation: %v", err)
		}
		if f.Event != nil {
			next = *f.Event
		}
	}
	recs := h.records(id)
	started := ofKind(recs, api.KindActivationStarted)
	if next.EventType != api.KindActivationFailed || len(started) != 1 || runs.Load() != 1 {
		t.Fatalf("after an activation whose end was not written: %s, %d loop runs: %v", next.EventType, runs.Load(), kinds(recs))
	}
	f := decode[api.Failure](t, next.Data)
	if f.Sequence != started[0].Sequence || f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("activation_failed %+v, want the activation's interrupted, ambiguous journal write failure", f)
	}
	// A reload of the journal as the fault left it closes it alike.
	var atFault []journal.Record
	for _, r := range recs {
		if r.Kind == kindSessionInterrupted {
			break
		}
		atFault = append(atFault, r)
	}
	_, added := reloaded(t, id, atFault)
	if got, want := kinds(recs[len(atFault):]), kinds(added); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("closed with %v in memory, with %v by a reload", got, want)
	}

	// Automatic activations wait for the next message, which is handed
	// the events again.
	<-handed
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatal(err)
	}
	if got := <-handed; len(got) != 1 || got[0] != observed {
		t.Errorf("the next message was handed %v, want the observation %d", got, observed)
	}
}
