package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// A riding send that comes once the journal takes records again, while
// records an earlier append could not write are still held for the next
// one, is not answered unavailable for that earlier refusal: its turn
// (which calls no model and no tool) ends, durable, with the records
// held before it.
func TestRideAfterRefusalPassedSucceeds(t *testing.T) {
	loops := map[string]agentloop.Func{"noop": func(context.Context, agentloop.Services, api.TurnInput) (api.TurnOutput, error) {
		return api.TurnOutput{Result: json.RawMessage(`"done"`)}, nil
	}}
	h, store := refusingHarness(t, Config{IdleTTL: KeepIdle, Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("noop")})
	ctx := context.Background()
	// A record held for the next append while the disk is full, whose
	// flushes are refused until they are tried a second apart.
	holdRefused(t, h, store, id)
	deadline := time.Now().Add(10 * time.Second)
	for store.refused.Load() < 16 {
		if time.Now().After(deadline) {
			t.Fatal("the held record's flush was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// An append carrying it is refused too.
	if err := h.engine.Interrupt(ctx, id); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Interrupt on a full disk = %v, want journal.ErrWrite", err)
	}

	// The disk has room again.
	store.failing.Store(false)
	sum, err := h.engine.Send(commits.WithRide(ctx, testRide()), id, api.UserInput{Message: "after"})
	if err != nil {
		t.Fatalf("riding Send once the journal takes records again = %v", err)
	}
	recs := h.records(id)
	if last := recs[len(recs)-1]; last.Kind != api.KindTurnEnded || sum.LastSequence != last.Sequence {
		t.Fatalf("journal ends with %s at %d, summary at %d", last.Kind, last.Sequence, sum.LastSequence)
	}
	if len(ofKind(recs, commits.AnswerKind)) != 1 || len(ofKind(recs, api.KindKVSet)) != 1 {
		t.Fatalf("records %v: want the held kv_set and the turn's answer durable", kinds(recs))
	}
}
