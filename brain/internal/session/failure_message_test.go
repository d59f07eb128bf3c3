package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestModelFailureSaysEachThingOnce: a turn that a provider's failure
// ended records (turn_failed, activation_failed) and answers (the API
// error) the model call's failure as model_call_failed recorded it, and
// the Go error of Send names the turn's failure and its code once each,
// whether the loop returns the model call's error as it is or wrapped
// with its own words; the turn's and the activation's spans end with the
// code and that message.
func TestModelFailureSaysEachThingOnce(t *testing.T) {
	perr := &model.ProviderError{Code: "rate_limit_exceeded", Message: "status 429: Rate limit reached for gpt-test", Retryable: true}
	models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return failingModel{perr}, nil }}
	loops := map[string]agentloop.Func{"wraps": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		_, err := svc.Model(ctx, api.ModelRequest{Messages: []api.Message{api.UserMessage(*in.Input)}})
		return api.TurnOutput{}, fmt.Errorf("planning step: %w", err)
	}}
	for _, tc := range []struct {
		name   string
		loop   *api.Agentloop
		prefix string // the loop's own words before the model call's failure
	}{
		{name: "builtin"},
		{name: "wrapped", loop: testLoop("wraps"), prefix: "planning step: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			cfg, req := Config{Models: models, Tracer: tp.Tracer("test")}, api.CreateSessionRequest{}
			if tc.loop != nil {
				cfg.Loops, req.Agentloop = testLoops(loops), tc.loop
			}
			h := newHarness(t, cfg, nil)
			id := h.create(req)
			_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
			var te *TurnError
			if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed || !te.Retryable {
				t.Fatalf("Send = %v, want a retryable turn error %s", err, api.CodeModelProviderFailed)
			}
			recs := h.records(id)
			callFailed := ofKind(recs, api.KindModelCallFailed)
			if len(callFailed) != 1 {
				t.Fatalf("%d model_call_failed records, want 1", len(callFailed))
			}
			call := decode[api.Failure](t, callFailed[0].Data)
			if n := strings.Count(call.Message, perr.Message); n != 1 {
				t.Fatalf("model_call_failed message %q carries the provider's message %d times", call.Message, n)
			}
			want := tc.prefix + call.Message
			for _, kind := range []string{api.KindTurnFailed, api.KindActivationFailed} {
				fs := ofKind(recs, kind)
				if len(fs) != 1 {
					t.Fatalf("%d %s records, want 1", len(fs), kind)
				}
				if f := decode[api.Failure](t, fs[0].Data); f.Code != api.CodeModelProviderFailed || f.Message != want {
					t.Errorf("%s = %s %q, want %s %q", kind, f.Code, f.Message, api.CodeModelProviderFailed, want)
				}
			}
			if ae := APIError(err); ae.Code != api.CodeModelProviderFailed || ae.Message != want {
				t.Errorf("API error = %s %q, want %s %q", ae.Code, ae.Message, api.CodeModelProviderFailed, want)
			}
			ended := 0
			for _, sp := range spans.Ended() {
				if name := sp.Name(); name == "brain.turn" || name == "brain.activation" {
					ended++
					if d := sp.Status().Description; d != api.CodeModelProviderFailed+": "+want {
						t.Errorf("span %s status %q, want %q", name, d, api.CodeModelProviderFailed+": "+want)
					}
				}
			}
			if ended != 2 {
				t.Errorf("%d turn and activation spans ended, want 2", ended)
			}
			text := err.Error()
			for _, s := range []string{"turn failed", api.CodeModelProviderFailed, "provider failed", perr.Code, perr.Message} {
				if n := strings.Count(text, s); n != 1 {
					t.Errorf("Send's error %q says %q %d times, want once", text, s, n)
				}
			}
		})
	}
}
