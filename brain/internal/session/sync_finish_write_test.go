package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A finish a provider sends during its execute (the synchronous phase)
// that cannot be recorded is answered storage unavailable, as one sent
// after the phase is: the provider that sends it again is answered
// storage unavailable while the call's close cannot be written either,
// then a conflict saying the finish was not recorded; not the refusal of
// a token never issued. The token stays live for that.
func TestSyncFinishSentAgainAfterItCouldNotBeRecorded(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	finish := json.RawMessage(`{"status":"ok","value":"done"}`)
	first := make(chan error, 1)
	h.envs.mu.Lock()
	h.envs.onOp = func(op Operation) {
		if op.Request.Type != envapi.RequestExecute {
			return
		}
		svc, err := h.engine.Execution(op.SessionID, op.Sequence)
		if err != nil {
			first <- err
			return
		}
		store.failing.Store(true)
		_, err = svc.Call(ctx, envapi.MethodFinish, finish)
		first <- err
	}
	h.envs.mu.Unlock()
	_, _ = h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})})
	if err := <-first; !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish during the execute while writes fail = %v, want journal.ErrWrite (storage unavailable)", err)
	}
	ops := h.envs.opsOf(envapi.RequestExecute)
	if len(ops) != 1 {
		t.Fatalf("executes sent: %d", len(ops))
	}
	seq, token := ops[0].Sequence, ops[0].CallbackDone

	again := func() error {
		t.Helper()
		svc, err := h.engine.Execution(id, seq)
		if err != nil {
			return err
		}
		_, err = svc.Call(ctx, envapi.MethodFinish, finish)
		return err
	}
	atFault := len(h.records(id))
	if err := again(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("finish sent again while writes still fail = %v (code %q), want ErrUnavailable", err, Code(err))
	}
	if n := len(h.records(id)); n != atFault {
		t.Fatalf("%d records written while writes fail", n-atFault)
	}

	store.failing.Store(false)
	err := again()
	if !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict || !strings.Contains(err.Error(), "could not be recorded") {
		t.Fatalf("finish sent again once writes succeed = %v (code %q), want a conflict saying the finish could not be recorded", err, Code(err))
	}
	recs := h.records(id)
	if ended := ofKind(recs, api.KindToolCallEnded); len(ended) != 0 {
		t.Fatalf("a finish answered storage unavailable was recorded: %v", kinds(recs))
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, seq); !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("when the conflict is answered the call is closed %v as %+v: %v", closed, f, kinds(recs))
	}
	select {
	case <-token:
		t.Fatal("the call's invocation token was revoked: a finish sent again is refused as unauthorized")
	default:
	}
}

// A finish sent during the execute that could not be recorded is not
// what the loop reads either: the dispatch answers the call finished
// with no outcome recorded, as the journal closes it (interrupted,
// outcome unknown), and not the outcome the journal never held.
func TestLoopReadsNoOutcomeOfSyncFinishNotRecorded(t *testing.T) {
	store := &failOnce{kind: api.KindToolCallEnded}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	first := make(chan error, 1)
	h.envs.mu.Lock()
	h.envs.onOp = func(op Operation) {
		if op.Request.Type != envapi.RequestExecute {
			return
		}
		svc, err := h.engine.Execution(op.SessionID, op.Sequence)
		if err == nil {
			_, err = svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`{"status":"ok","value":"unrecorded-value"}`))
		}
		first <- err
	}
	h.envs.mu.Unlock()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "after the tool"})}); err != nil {
		t.Fatalf("turn after the finish that was not recorded: %v", err)
	}
	if err := <-first; !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish during the execute whose record failed = %v, want journal.ErrWrite", err)
	}
	tr, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(tr.Messages)
	if strings.Contains(string(raw), "unrecorded-value") {
		t.Fatalf("the loop was handed the outcome of a finish the journal does not hold: %s", raw)
	}
	if !strings.Contains(string(raw), "no outcome recorded") {
		t.Fatalf("the loop's tool result does not say the outcome is unknown: %s", raw)
	}
	for _, r := range h.records(id) {
		if strings.Contains(string(r.Data), "unrecorded-value") {
			t.Fatalf("record %d %s holds the outcome of the finish that was not recorded: %s", r.Sequence, r.Kind, r.Data)
		}
	}
}
