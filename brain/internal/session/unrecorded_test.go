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

// A background tool's finish that could not be recorded is answered
// storage unavailable (503, retry later). The provider that sends it
// again is answered what became of the call, once the journal says so: a
// conflict (409) saying that the finish was not recorded and the call is
// closed as interrupted, its outcome unknown; not the refusal of a token
// never issued (401). While the close cannot be written either, the
// finish sent again is answered storage unavailable again. The token
// stays live for it until the session is deleted.
func TestFinishSentAgainAfterItCouldNotBeRecorded(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	ops := h.envs.opsOf(envapi.RequestExecute)
	if len(ops) != 1 || ops[0].CallbackDone == nil {
		t.Fatalf("executes sent: %+v", ops)
	}
	seq, token := ops[0].Sequence, ops[0].CallbackDone
	svc, err := h.engine.Execution(id, seq)
	if err != nil {
		t.Fatal(err)
	}
	store.failing.Store(true)
	if _, err := svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`{"status":"ok","value":"done"}`)); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish while writes fail = %v, want journal.ErrWrite (storage unavailable)", err)
	}
	atFault := len(h.records(id))

	again := func() error {
		t.Helper()
		svc, err := h.engine.Execution(id, seq)
		if err != nil {
			t.Fatalf("the call whose finish was not recorded, asked for again: %v", err)
		}
		_, err = svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`{"status":"ok","value":"done"}`))
		return err
	}
	if err := again(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("finish sent again while writes still fail = %v, want ErrUnavailable", err)
	}
	if n := len(h.records(id)); n != atFault {
		t.Fatalf("%d records written while writes fail", n-atFault)
	}

	store.failing.Store(false)
	err = again()
	if !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict || !strings.Contains(err.Error(), "could not be recorded") {
		t.Fatalf("finish sent again once writes succeed = %v (code %q), want a conflict saying the finish could not be recorded", err, Code(err))
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, seq)
	if !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Fatalf("when the conflict is answered the call is closed %v as %+v: %v", closed, f, kinds(h.records(id)))
	}
	if ended := ofKind(h.records(id), api.KindToolCallEnded); len(ended) != 0 {
		t.Fatalf("the finish sent again was recorded after the call was closed: %v", kinds(h.records(id)))
	}
	// Other methods of the call answer the same.
	if _, err := svc.Emit(ctx, "progress", json.RawMessage(`{}`)); !errors.Is(err, ErrWrongState) {
		t.Errorf("emit of the call whose finish was not recorded = %v, want the conflict", err)
	}
	select {
	case <-token:
		t.Fatal("the call's invocation token was revoked: a finish sent again is refused as unauthorized")
	default:
	}

	if _, err := h.engine.End(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-token:
	default:
		t.Fatal("the invocation token of the deleted session's call is still live")
	}
	if _, err := h.engine.Execution(id, seq); !errors.Is(err, ErrExecutionClosed) {
		t.Errorf("execution of a deleted session = %v, want ErrExecutionClosed", err)
	}
}
