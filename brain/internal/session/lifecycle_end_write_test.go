package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// failOnceHarness opens an engine, keeping idle sessions in memory, over
// a file journal whose first append of a record of kind fails as a full
// disk would.
func failOnceHarness(t *testing.T, kind string, envs map[string]string) (*harness, *failOnce) {
	t.Helper()
	store := &failOnce{kind: kind}
	h := wrappedHarness(t, Config{IdleTTL: KeepIdle}, envs, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	return h, store
}

// An end of a session whose session_ended could not be written does not
// leave the session ending for as long as it stays in memory: the journal
// holds it ending, and, as on a reload, it is ended with the fault as the
// failure of its ending. An end asked again answers the ended session.
func TestSessionEndedNotWritten(t *testing.T) {
	h, _ := failOnceHarness(t, api.KindSessionEnded, map[string]string{"box": "echo"})
	id := h.create(toolSession("echo"))
	ctx := context.Background()
	if _, err := h.engine.End(ctx, id); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("end whose session_ended was not written = %v, want an error wrapping journal.ErrWrite", err)
	}
	sum, err := h.engine.End(ctx, id)
	if err != nil || sum.Status != api.StatusEnded {
		t.Fatalf("end asked again = %+v, %v; want the session ended", sum, err)
	}
	recs := h.records(id)
	failed := ofKind(recs, api.KindSessionEndFailed)
	if len(failed) != 1 || len(ofKind(recs, api.KindSessionEnded)) != 1 || recs[len(recs)-1].Kind != api.KindSessionEnded {
		t.Fatalf("want the ending failed, then the session ended: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, failed[0].Data); !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("session_end_failed %+v, want an ambiguous journal write failure", f)
	}
}

// A creation whose last record could not be written does not leave the
// session creating (busy for every message) for as long as it stays in
// memory: as on a reload, its creation failed with the fault.
func TestSessionCreationEndNotWritten(t *testing.T) {
	h, _ := failOnceHarness(t, api.KindSessionCreationEnded, map[string]string{"box": "echo"})
	ctx := context.Background()
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "test"}
	id := NewSessionID()
	if _, err := h.engine.Create(ctx, id, req); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("create whose end was not written = %v, want an error wrapping journal.ErrWrite", err)
	}
	sum, err := h.engine.Summary(ctx, id)
	if err != nil || sum.Status != api.StatusFailed {
		t.Fatalf("session after its creation's end was lost = %+v, %v; want it failed", sum, err)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); !errors.Is(err, ErrWrongState) {
		t.Errorf("message to the failed session = %v, want ErrWrongState", err)
	}
	recs := h.records(id)
	last := recs[len(recs)-1]
	if last.Kind != api.KindSessionCreationFailed {
		t.Fatalf("want the creation failed: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, last.Data); f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("session_creation_failed %+v, want an interrupted, ambiguous journal write failure", f)
	}
}

// An interrupt of a session whose turn's end could not be written, while
// a tool of it runs on in the background, closes that turn as the next
// message would (and as a reload would): the session is idle again, not
// running a turn that nothing runs any more.
func TestInterruptAfterTurnEndNotWritten(t *testing.T) {
	h, _ := failOnceHarness(t, api.KindTurnEnded, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("turn whose end was not written = %v, want an error wrapping journal.ErrWrite", err)
	}
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	sum, err := h.engine.Summary(ctx, id)
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("session after the interrupt = %+v, %v; want it idle", sum, err)
	}
	recs := h.records(id)
	turn := ofKind(recs, api.KindTurnStarted)[0].Sequence
	failedTurns := ofKind(recs, api.KindTurnFailed)
	if len(failedTurns) != 1 {
		t.Fatalf("want the turn failed: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, failedTurns[0].Data); f.Sequence != turn || f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("turn_failed %+v, want the turn's interrupted, ambiguous journal write failure", f)
	}
}

// An end that stops a tool whose end cannot be written closes that tool
// call before the session ends, as a reload would have closed it: nothing
// of the session is recorded after session_ended, and the tool call is
// closed as failed, interrupted and ambiguous.
func TestEndStopsToolWhoseEndIsNotWritten(t *testing.T) {
	h, store := failOnceHarness(t, api.KindToolCallEnded, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	if sum, err := h.engine.End(ctx, id); err != nil || sum.Status != api.StatusEnded || !store.failed.Load() {
		t.Fatalf("end = %+v, %v (tool end failed: %v); want the session ended", sum, err, store.failed.Load())
	}
	// Read again from the journal.
	if _, err := h.engine.Summary(ctx, id); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	if last := recs[len(recs)-1]; last.Kind != api.KindSessionEnded {
		t.Fatalf("records after session_ended: %v", kinds(recs))
	}
	// As a reload of an ending session, which holds no activation back:
	// none would come.
	if n := len(ofKind(recs, kindSessionInterrupted)); n != 0 {
		t.Errorf("an ending session recorded %d interrupts: %v", n, kinds(recs))
	}
	tool := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	closing := ofKind(recs, api.KindToolCallFailed)
	if len(closing) != 1 || len(ofKind(recs, api.KindToolCallEnded)) != 0 {
		t.Fatalf("want the tool call closed as failed: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, closing[0].Data); f.Sequence != tool || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("tool_call_failed %+v, want tool %d interrupted and ambiguous", f, tool)
	}
}

// A creation whose environment setup ended without its end written closes
// that setup before the creation's own end, as a reload of the creating
// session would: nothing of the session follows its creation's failure.
func TestCreationSetupEndNotWritten(t *testing.T) {
	h, store := failOnceHarness(t, api.KindEnvironmentSetupEnded, map[string]string{"box": "echo"})
	ctx := context.Background()
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "test"}
	sum, err := h.engine.Create(ctx, "", req)
	if err != nil || sum.Status != api.StatusFailed || !store.failed.Load() {
		t.Fatalf("create whose setup end was not written = %+v, %v; want the session failed", sum, err)
	}
	// Read again from the journal.
	if _, err := h.engine.Summary(ctx, sum.SessionID); err != nil {
		t.Fatal(err)
	}
	recs := h.records(sum.SessionID)
	if last := recs[len(recs)-1]; last.Kind != api.KindSessionCreationFailed {
		t.Fatalf("records after session_creation_failed: %v", kinds(recs))
	}
	setup := ofKind(recs, api.KindEnvironmentSetupStarted)[0].Sequence
	closing := ofKind(recs, api.KindEnvironmentSetupFailed)
	if len(closing) != 1 {
		t.Fatalf("want the setup closed as failed: %v", kinds(recs))
	}
	if f := decode[api.Failure](t, closing[0].Data); f.Sequence != setup || f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("environment_setup_failed %+v, want setup %d's interrupted, ambiguous journal write failure", f, setup)
	}
}
