package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// The methods of a tool call whose finish could not be recorded answer
// alike whether they are reached through Call or called directly (a
// host's events route emits, reports results and returns through them):
// storage unavailable (retry later) while the call's close cannot be
// written, nothing written; then, once the journal says what became of
// the call, the conflict saying the finish was not recorded.
func TestDirectCallsOfUnrecordedFinishWaitForItsClose(t *testing.T) {
	h, store, id := refusingReturnerSession(t)
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	ops := h.envs.opsOf(envapi.RequestExecute)
	if len(ops) != 1 {
		t.Fatalf("executes sent: %+v", ops)
	}
	seq := ops[0].Sequence
	svc, err := h.engine.Execution(id, seq)
	if err != nil {
		t.Fatal(err)
	}
	store.failing.Store(true)
	if _, err := svc.Finish(ctx, &api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"done"`)}); !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish while writes fail = %v, want journal.ErrWrite (storage unavailable)", err)
	}
	atFault := len(h.records(id))
	direct := map[string]func() error{
		"emit": func() error {
			_, err := svc.Emit(ctx, "progress", json.RawMessage(`{"step":1}`))
			return err
		},
		"result": func() error {
			_, err := svc.Result(ctx, api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"partial"`)})
			return err
		},
		"returned": func() error {
			_, err := svc.Returned(ctx, nil)
			return err
		},
	}
	for name, call := range direct {
		if err := call(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s while the call's close cannot be written = %v, want ErrUnavailable (storage unavailable, retry later)", name, err)
		}
	}
	if n := len(h.records(id)); n != atFault {
		t.Fatalf("%d records written while writes fail", n-atFault)
	}

	store.failing.Store(false)
	for name, call := range direct {
		if err := call(); !errors.Is(err, ErrWrongState) || Code(err) != api.CodeConflict {
			t.Errorf("%s once writes succeed = %v (code %q), want the conflict", name, err, Code(err))
		}
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, seq); !closed || f.Code != api.FailureInterrupted {
		t.Fatalf("the call is closed %v as %+v: %v", closed, f, kinds(h.records(id)))
	}
	for _, kind := range []string{api.KindExtensionEvent, api.KindToolResultEmitted} {
		if n := len(ofKind(h.records(id), kind)); n != 0 {
			t.Errorf("%d %s records of the closed call", n, kind)
		}
	}
}
