package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// lostFinishBesideBackgroundTool sends a turn of two background tool
// calls on a session opened by returnerSession over store, and finishes
// the first one while its tool_call_ended cannot be written (store fails
// it); the second one keeps the session in memory. It answers the
// sequences of the lost call and of the one still running, and the
// journal as the fault left it.
func lostFinishBesideBackgroundTool(t *testing.T, h *harness, id string, failWrites func()) (uint64, uint64, []journal.Record) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}, {"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	tools := ofKind(h.records(id), api.KindToolCallStarted)
	if len(tools) != 2 {
		t.Fatalf("%d tool calls started, want 2", len(tools))
	}
	lost, running := tools[0].Sequence, tools[1].Sequence
	finishAtEnd(t, h, id, running)
	svc, err := h.engine.Execution(id, lost)
	if err != nil {
		t.Fatal(err)
	}
	if failWrites != nil {
		failWrites()
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"lost"`)}
	if _, err := svc.Finish(ctx, &value); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish whose end was not written = %v, want journal.ErrWrite", err)
	}
	return lost, running, h.records(id)
}

// Reads of a session kept in memory after a tool call's end could not be
// written (another background tool still runs) answer what a reload of
// the journal answers: the call closed as failed, interrupted and
// ambiguous, with automatic activations held back, rather than a call
// still open that nothing will ever finish. The close is written before
// the read answers, so that every record read is durable.
func TestReadsOfFaultedSessionCloseLostToolEnd(t *testing.T) {
	store := &failOnce{kind: api.KindToolCallEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	lost, running, atFault := lostFinishBesideBackgroundTool(t, h, id, nil)
	// A reload closes the lost call so, and the running one too (a
	// restart stops it; in memory it runs on).
	_, added := reloaded(t, id, atFault)
	var want []string
	for _, r := range added {
		if r.Kind == api.KindToolCallFailed && decode[api.Failure](t, r.Data).Sequence == running {
			continue
		}
		want = append(want, r.Kind)
	}

	sum, err := h.engine.Summary(ctx, id)
	if err != nil {
		t.Fatalf("summary after writes came back: %v", err)
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, lost)
	if !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("events of the session read after the lost end: call %d closed %v as %+v: %v", lost, closed, f, kinds(h.records(id)))
	}
	recs := h.records(id)
	if len(recs)-len(atFault) != len(want) {
		t.Fatalf("the read wrote %v after the fault, a reload %v", kinds(recs[len(atFault):]), want)
	} else {
		for i, k := range kinds(recs[len(atFault):]) {
			if k != want[i] {
				t.Fatalf("the read wrote %v after the fault, a reload %v", kinds(recs[len(atFault):]), want)
			}
		}
	}
	if sum.LastSequence != recs[len(recs)-1].Sequence || page.NextCursor != sum.LastSequence {
		t.Errorf("summary last_sequence %d, events up to %d, journal up to %d", sum.LastSequence, page.NextCursor, recs[len(recs)-1].Sequence)
	}
}

// A turn whose end could not be written while a background tool keeps
// its session in memory reads as a reload shows it: failed
// (interrupted), the session idle; not running with nothing running it.
func TestSummaryOfFaultedSessionClosesLostTurn(t *testing.T) {
	store := &failOnce{kind: api.KindActivationEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("turn whose end was not written = %v, want journal.ErrWrite", err)
	}
	atFault := h.records(id)
	finishAtEnd(t, h, id, ofKind(atFault, api.KindToolCallStarted)[0].Sequence)
	turn := ofKind(atFault, api.KindTurnStarted)
	if len(turn) != 1 {
		t.Fatalf("turns started: %v", kinds(atFault))
	}
	events, _ := reloaded(t, id, atFault)
	if _, _, ok := failureEvent(t, events, api.KindTurnFailed, turn[0].Sequence); !ok {
		t.Fatalf("a reload leaves the turn open: %v", events)
	}

	sum, err := h.engine.Summary(ctx, id)
	if err != nil {
		t.Fatalf("summary after writes came back: %v", err)
	}
	if sum.Status != api.StatusIdle {
		t.Errorf("summary after the turn's end was lost: %s, want idle as a reload shows", sum.Status)
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, _, closed := failureEvent(t, page.Events, api.KindTurnFailed, turn[0].Sequence)
	if !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("turn %d closed %v as %+v: %v", turn[0].Sequence, closed, f, kinds(h.records(id)))
	}
}

// While the close of a lost end cannot be written either, reads of the
// session are refused as storage unavailable, and show nothing: the
// state in memory is not what the journal holds. Once writes succeed the
// next read closes the call.
func TestReadsOfFaultedSessionRefusedWhileWritesFail(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	lost, _, atFault := lostFinishBesideBackgroundTool(t, h, id, func() { store.failing.Store(true) })

	if _, err := h.engine.Summary(ctx, id); !errors.Is(err, ErrUnavailable) {
		t.Errorf("summary while the lost end cannot be closed = %v, want ErrUnavailable", err)
	}
	if _, err := h.engine.Transcript(ctx, id); !errors.Is(err, ErrUnavailable) {
		t.Errorf("transcript while the lost end cannot be closed = %v, want ErrUnavailable", err)
	}
	if page, err := h.engine.Events(ctx, id, 0); !errors.Is(err, ErrUnavailable) {
		t.Errorf("events while the lost end cannot be closed = %d events, %v; want ErrUnavailable", len(page.Events), err)
	}
	if list, err := h.engine.List(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("list while the lost end cannot be closed = %v, %v; want ErrUnavailable", list, err)
	}
	if _, err := h.engine.Subscribe(ctx, id, 0, 0); !errors.Is(err, ErrUnavailable) {
		t.Errorf("subscription while the lost end cannot be closed = %v, want ErrUnavailable", err)
	}
	if n := len(h.records(id)); n != len(atFault) {
		t.Fatalf("%d records written while writes fail", n-len(atFault))
	}

	store.failing.Store(false)
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatalf("events once writes succeed: %v", err)
	}
	if f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, lost); !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("call %d closed %v as %+v once writes succeed: %v", lost, closed, f, kinds(h.records(id)))
	}
}

// finishAtEnd finishes background tool call seq when the test ends,
// before its engine closes (which waits for it).
func finishAtEnd(t *testing.T, h *harness, id string, seq uint64) {
	t.Cleanup(func() {
		if svc, err := h.engine.Execution(id, seq); err == nil {
			_, _ = svc.Finish(context.Background(), nil)
		}
	})
}
