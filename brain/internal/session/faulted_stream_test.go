package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// nextFailure follows sub until the failure of kind closing seq arrives,
// and answers it; it fails the test when ctx ends first.
func nextFailure(t *testing.T, ctx context.Context, sub *Subscription, kind string, seq uint64) api.Failure {
	t.Helper()
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("waiting on the open stream for the %s closing %d: %v", kind, seq, err)
		}
		if f.Event == nil || f.Event.EventType != kind {
			continue
		}
		if fail := decode[api.Failure](t, f.Event.Data); fail.Sequence == seq {
			return fail
		}
	}
}

// A stream opened before a tool call's finish could not be written (the
// session stays in memory: another background tool runs) receives the
// call's close, interrupted and ambiguous, once the journal takes
// records again, with no other read, write or wake of the session to
// carry it.
func TestOpenStreamReceivesCloseOfLostToolEnd(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	lost, _, atFault := lostFinishBesideBackgroundTool(t, h, id, func() { store.failing.Store(true) })
	// While writes fail nothing is written, however long the stream waits.
	time.Sleep(50 * time.Millisecond)
	if n := len(h.records(id)); n != len(atFault) {
		t.Fatalf("%d records written while writes fail", n-len(atFault))
	}
	store.failing.Store(false)

	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f := nextFailure(t, wctx, sub, api.KindToolCallFailed, lost)
	if f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("call %d closed on the stream as %+v, want interrupted and ambiguous", lost, f)
	}
}

// A stream opened before a turn whose end could not be written (nothing
// else of the session runs, so it leaves memory) receives the turn's
// close once the journal takes records again, as its reload writes it.
func TestOpenStreamReceivesCloseOfLostTurn(t *testing.T) {
	store := &failOnce{kind: api.KindActivationEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"reply": "hello"})}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("turn whose end was not written = %v, want journal.ErrWrite", err)
	}
	turn := ofKind(h.records(id), api.KindTurnStarted)
	if len(turn) != 1 {
		t.Fatalf("turns started: %v", kinds(h.records(id)))
	}

	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f := nextFailure(t, wctx, sub, api.KindTurnFailed, turn[0].Sequence)
	if f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("turn %d closed on the stream as %+v, want interrupted and ambiguous", turn[0].Sequence, f)
	}
}
