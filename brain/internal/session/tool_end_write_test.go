package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// reloaded folds recs, the journal of session id as it was at some point,
// in an engine of its own, as a restart would, and answers the events and
// the records its reload committed after them.
func reloaded(t *testing.T, id string, recs []journal.Record) ([]api.Event, []journal.Record) {
	t.Helper()
	store, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	if err := store.Append(ctx, id, 1, recs); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	last := recs[len(recs)-1].Sequence
	page, err := e.Events(ctx, id, last)
	if err != nil {
		t.Fatal(err)
	}
	added, err := store.Read(ctx, id, last, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return page.Events, added
}

// failureEvent answers the data of the event of kind that closes the
// operation started at seq, if there is one.
func failureEvent(t *testing.T, events []api.Event, kind string, seq uint64) (api.Failure, uint64, bool) {
	t.Helper()
	for _, ev := range events {
		if ev.EventType != kind {
			continue
		}
		if f := decode[api.Failure](t, ev.Data); f.Sequence == seq {
			return f, ev.Sequence, true
		}
	}
	return api.Failure{}, 0, false
}

// A tool call that finished while the journal could not be written (its
// tool_call_ended was lost) is closed at the next message, while another
// tool of the session still runs in the background, as a reload from the
// journal closes it: failed, interrupted and ambiguous, before the next
// turn starts; it does not stay open in the session's events until the
// session is next reloaded.
func TestToolEndNotWrittenBesideBackgroundTool(t *testing.T) {
	store := &failOnce{kind: api.KindToolCallEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
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
	svc, err := h.engine.Execution(id, lost)
	if err != nil {
		t.Fatal(err)
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"lost"`)}
	if _, err := svc.Finish(ctx, &value); err == nil || !store.failed.Load() {
		t.Fatalf("finish whose end was not written = %v, want an error", err)
	}
	atFault := h.records(id)

	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatalf("message after writes came back, beside the other background tool: %v", err)
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, at, closed := failureEvent(t, page.Events, api.KindToolCallFailed, lost)
	if !closed {
		t.Fatalf("tool call %d is still open after the next message: %v", lost, kinds(h.records(id)))
	}
	if f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("tool_call_failed %+v, want an interrupted, ambiguous journal write failure", f)
	}
	if turns := ofKind(h.records(id), api.KindTurnStarted); at > turns[len(turns)-1].Sequence {
		t.Errorf("the tool call was closed after the next turn started: %v", kinds(h.records(id)))
	}
	// A reload of the journal as the fault left it closes the call alike
	// (and the other one too: a restart stops it).
	events, added := reloaded(t, id, atFault)
	rf, _, ok := failureEvent(t, events, api.KindToolCallFailed, lost)
	if !ok || rf.Code != f.Code || rf.Ambiguous != f.Ambiguous || rf.Retryable != f.Retryable {
		t.Errorf("closed as %+v in memory, and as %+v (found %v) by a reload", f, rf, ok)
	}
	// Both hold automatic activations back until the next message
	// first, as an interrupt does.
	closing := kinds(h.records(id)[len(atFault):])
	if want := kinds(added); len(want) < 2 || len(closing) < 2 || closing[0] != want[0] || closing[1] != want[1] {
		t.Errorf("closed with %v in memory, with %v by a reload", closing, want)
	}

	// The other tool runs on and finishes by itself.
	svc, err = h.engine.Execution(id, running)
	if err != nil {
		t.Fatalf("the other background tool after the next turn: %v", err)
	}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatalf("the other background tool's own finish: %v", err)
	}
	ended := ofKind(h.records(id), api.KindToolCallEnded)
	if len(ended) != 1 || decode[api.ToolCallEnded](t, ended[0].Data).Sequence != running {
		t.Fatalf("tool calls ended: %v, want only %d's own finish", ended, running)
	}
}

// A write that comes while the journal still cannot be written closes
// nothing of what a lost end left open, and forgets none of it either:
// the first write after the fault passed closes it.
func TestUnendedKeptWhileWritesFail(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}, {"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	tools := ofKind(h.records(id), api.KindToolCallStarted)
	lost, running := tools[0].Sequence, tools[1].Sequence
	store.failing.Store(true)
	svc, err := h.engine.Execution(id, lost)
	if err != nil {
		t.Fatal(err)
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"lost"`)}
	if _, err := svc.Finish(ctx, &value); err == nil {
		t.Fatal("finish whose end was not written succeeded")
	}
	if _, err := h.engine.CallEnvironment(ctx, id, "box", "work", nil); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("call while writes fail = %v, want an error wrapping journal.ErrWrite", err)
	}
	store.failing.Store(false)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatalf("message after writes came back: %v", err)
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, lost); !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("tool call %d after the fault passed: closed %v as %+v: %v", lost, closed, f, kinds(h.records(id)))
	}
	if _, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, running); closed {
		t.Errorf("the tool call still running was closed: %v", kinds(h.records(id)))
	}
	svc, err = h.engine.Execution(id, running)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatalf("the other background tool's own finish: %v", err)
	}
}

// returnerSession opens an engine that keeps idle sessions in memory on a
// real file journal, seen through wrap (a store that fails writes), with
// one environment "box" whose tools return and finish in the background,
// and creates a session on it.
func returnerSession(t *testing.T, wrap func(journal.Store) journal.Store) (*harness, string) {
	t.Helper()
	h := wrappedHarness(t, Config{IdleTTL: KeepIdle}, map[string]string{"box": "returner"}, wrap)
	return h, h.create(toolSession("returner"))
}

// refusingReturnerSession is returnerSession over a journal that refuses
// appends while the refusingStore it answers is failing.
func refusingReturnerSession(t *testing.T) (*harness, *refusingStore, string) {
	t.Helper()
	h, store := refusingHarness(t, Config{IdleTTL: KeepIdle}, map[string]string{"box": "returner"})
	return h, store, h.create(toolSession("returner"))
}
