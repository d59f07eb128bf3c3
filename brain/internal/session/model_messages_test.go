package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
)

// TestModelCallWithoutMessagesIsRefused: a model call whose request has
// no messages (what a ModelRequest decoded without them holds) is refused
// as invalid_request, whoever makes it, before a model_call_started is
// recorded; the loop's next call, with messages, runs.
func TestModelCallWithoutMessagesIsRefused(t *testing.T) {
	var callErr, nextErr error
	loop := func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		_, callErr = svc.Model(ctx, api.ModelRequest{System: new("s")})
		_, nextErr = svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}})
		return api.TurnOutput{}, nil
	}
	h := newHarness(t, Config{Loops: testLoops(map[string]agentloop.Func{"l": loop})}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("l")})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatalf("Send = %v", err)
	}
	if !errors.Is(callErr, ErrInvalid) || Code(callErr) != api.CodeInvalidRequest || !strings.Contains(callErr.Error(), "messages") {
		t.Fatalf("model call without messages = %v (code %q), want invalid_request naming messages", callErr, Code(callErr))
	}
	if nextErr != nil {
		t.Fatalf("model call with messages after the refusal = %v", nextErr)
	}
	if n := len(ofKind(h.records(id), api.KindModelCallStarted)); n != 1 {
		t.Fatalf("%d model_call_started records, want 1 (the call with messages)", n)
	}
}
