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

// A service call answered over Call whose own record cannot be written (a
// tool's model call that failed, whose model_call_failed the journal
// refused) is answered the journal's error, as a call that succeeded
// is, not the failure the journal does not hold: the caller outside the
// engine is told nothing that is not durable.
func TestCallAnswersNothingUnwritten(t *testing.T) {
	store := &failOnce{kind: api.KindModelCallFailed}
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	ops := h.envs.opsOf(envapi.RequestExecute)
	if len(ops) != 1 {
		t.Fatalf("executes sent: %+v", ops)
	}
	finishAtEnd(t, h, id, ops[0].Sequence)
	svc, err := h.engine.Execution(id, ops[0].Sequence)
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(api.ModelRequest{Messages: []api.Message{api.UserMessage(api.UserInput{
		Message: script(map[string]any{"fail": map[string]any{"code": "overloaded", "message": "the provider is down"}})})}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Call(ctx, envapi.MethodModel, req)
	if !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("model call whose failure was not written answered %v (code %s), want the journal's error", err, Code(err))
	}
	if !store.failed.Load() {
		t.Fatal("the model call's failure was never written")
	}
}
