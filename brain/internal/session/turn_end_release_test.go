package session

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A cancelled turn still gets its turn-end cleanup: after an interrupted
// turn the registered method release is called once with the turn's
// turn_started sequence, after the turn's failure is recorded.
func TestOnTurnEndReleaseAfterCancelledTurn(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "release"})
	id := h.create(toolSession("release"))
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"delay_ms": 60000})})
		errc <- err
	}()
	h.waitEvent(id, 0, api.KindModelCallStarted)
	if err := h.engine.Interrupt(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; Code(err) != api.CodeCancelled {
		t.Fatalf("interrupted send: %v", err)
	}
	h.waitEvent(id, 0, api.KindEnvironmentCallEnded)
	recs := h.records(id)
	turn := ofKind(recs, api.KindTurnStarted)[0].Sequence
	failed := ofKind(recs, api.KindTurnFailed)
	if len(failed) != 1 || decode[api.Failure](t, failed[0].Data).Code != api.FailureCancelled {
		t.Fatalf("records = %v", kinds(recs))
	}
	calls := h.envs.opsOf(envapi.RequestCall)
	if len(calls) != 1 || calls[0].Request.Name != "release" || string(calls[0].Request.Input) != `{"sequence":`+itoa(turn)+`}` {
		t.Fatalf("calls = %+v, want one release of turn %d", calls, turn)
	}
	if started := ofKind(recs, api.KindEnvironmentCallStarted); len(started) != 1 || started[0].Sequence < failed[0].Sequence {
		t.Fatalf("release not sent after the turn failed: %v", kinds(recs))
	}
}

// While a turn's tool is still open in the background (its turn-end
// cleanup deferred until it closes), the session processes a later
// message, and the open tool keeps its callback.
func TestLaterMessageWhileBackgroundToolOpen(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "releasereturner"})
	id := h.create(toolSession("releasereturner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo", "input": map[string]any{}}}, "reply": "later"})}); err != nil {
		t.Fatal(err)
	}
	recs := h.records(id)
	first := ofKind(recs, api.KindTurnStarted)[0].Sequence
	tool := ofKind(recs, api.KindToolCallStarted)[0].Sequence
	svc, err := h.engine.Execution(id, tool)
	if err != nil {
		t.Fatalf("the returned tool is not open: %v", err)
	}
	sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"})
	if err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("second message while a tool is open: %+v %v", sum, err)
	}
	recs = h.records(id)
	if n := len(ofKind(recs, api.KindTurnEnded)); n != 2 || len(ofKind(recs, api.KindToolCallEnded)) != 0 {
		t.Fatalf("records = %v, want two ended turns and the tool still open", kinds(recs))
	}
	// The open tool still reports through its callback.
	if _, err := svc.Emit(ctx, "still_running", nil); err != nil {
		t.Fatalf("emit of the background tool after the second turn: %v", err)
	}
	second := ofKind(recs, api.KindTurnStarted)[1].Sequence
	for _, c := range h.envs.opsOf(envapi.RequestCall) {
		if string(c.Request.Input) == `{"sequence":`+itoa(first)+`}` {
			t.Fatalf("the first turn's release was sent while its tool was open")
		}
	}
	last := uint64(len(h.records(id)))
	if _, err := svc.Finish(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Each turn is released once: the first after its tool closed.
	var seen []string
	for len(seen) < 2 {
		ev := h.waitEvent(id, last, api.KindEnvironmentCallEnded)
		last = ev.Sequence
		seen = nil
		for _, c := range h.envs.opsOf(envapi.RequestCall) {
			seen = append(seen, string(c.Request.Input))
		}
	}
	want := map[string]bool{`{"sequence":` + itoa(first) + `}`: true, `{"sequence":` + itoa(second) + `}`: true}
	if len(seen) != 2 || !want[seen[0]] || !want[seen[1]] || seen[0] == seen[1] {
		t.Fatalf("release calls %v, want one for turn %d and one for turn %d", seen, first, second)
	}
}
