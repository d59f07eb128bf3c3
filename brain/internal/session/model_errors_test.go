package session

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// failingModel answers every call with err.
type failingModel struct{ err error }

func (m failingModel) Call(context.Context, model.Request, func(model.Delta)) (model.Result, error) {
	return model.Result{}, m.err
}

// TestModelErrorCodes checks that a model failure is recorded, and answered,
// with the code its kind calls for.
func TestModelErrorCodes(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      string
		retryable bool
	}{
		{"incomplete output", &model.OutputError{Code: api.CodeModelOutputIncomplete, Message: "tool call cut by max_tokens"}, api.CodeModelOutputIncomplete, false},
		{"invalid output", &model.OutputError{Code: api.CodeModelOutputInvalid, Message: "tool input is not an object"}, api.CodeModelOutputInvalid, false},
		{"overloaded provider", &model.ProviderError{Code: "overloaded_error", Message: "busy", Retryable: true}, api.CodeModelProviderFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return failingModel{tt.err}, nil }}
			h := newHarness(t, Config{Models: models}, nil)
			id := h.create(api.CreateSessionRequest{})
			_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
			var te *TurnError
			if !errors.As(err, &te) || te.Code != tt.code || te.Retryable != tt.retryable {
				t.Fatalf("Send = %v, want a turn error %s (retryable %v)", err, tt.code, tt.retryable)
			}
			failedCalls := ofKind(h.records(id), api.KindModelCallFailed)
			if len(failedCalls) != 1 {
				t.Fatalf("%d model_call_failed records, want 1", len(failedCalls))
			}
			if f := decode[api.Failure](t, failedCalls[0].Data); f.Code != tt.code {
				t.Errorf("model_call_failed code = %q, want %q", f.Code, tt.code)
			}
		})
	}
}
