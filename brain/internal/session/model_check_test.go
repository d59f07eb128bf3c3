package session

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// countingProvider is a model provider endpoint that counts the requests
// it receives and answers none of them usefully.
func countingProvider(t *testing.T) (base string, requests *atomic.Int64) {
	t.Helper()
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"unexpected"}}`, http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", requests
}

// TestModelRequestTheDialectCannotCarry: a loop's model request with an
// option (or another part) the session's provider does not take is
// refused as an invalid request before anything is committed or sent: no
// model_call_started, no model_call_failed, no request to the provider,
// and the call does not count toward the turn's model calls.
func TestModelRequestTheDialectCannotCarry(t *testing.T) {
	base, requests := countingProvider(t)
	models, err := model.New(model.Config{AnthropicBaseURL: base, OpenAIBaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider string
		req      api.ModelRequest
	}{
		{model.ProviderAnthropic, api.ModelRequest{Options: json.RawMessage(`{"seed":1}`)}},
		{model.ProviderOpenAI, api.ModelRequest{Options: json.RawMessage(`{"top_k":5}`)}},
		{model.ProviderOpenAI, api.ModelRequest{Options: json.RawMessage(`{"operation":"compact","temperature":1}`)}},
		{model.ProviderOpenAIChat, api.ModelRequest{Options: json.RawMessage(`{"thinking":{}}`)}},
		{model.ProviderAnthropic, api.ModelRequest{ResponseFormat: json.RawMessage(`{"type":"json_object"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.provider+" "+string(tt.req.Options)+string(tt.req.ResponseFormat), func(t *testing.T) {
			var callErr error
			loop := func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
				req := tt.req
				req.Messages = []api.Message{api.UserMessage(*in.Input)}
				_, callErr = svc.Model(ctx, req)
				// The loop goes on after the refusal: a valid request is
				// still its first model call (the provider refuses it).
				_, _ = svc.Model(ctx, api.ModelRequest{Messages: req.Messages})
				return api.TurnOutput{}, nil
			}
			limits := DefaultLimits()
			limits.MaxModelCalls = 1
			h := newHarness(t, Config{Models: models, Limits: limits, Loops: testLoops(map[string]agentloop.Func{"l": loop})}, nil)
			id := h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: tt.provider, Name: "m"}, Agentloop: testLoop("l")})
			before := requests.Load()
			if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
				t.Fatalf("Send = %v", err)
			}
			if !errors.Is(callErr, ErrInvalid) || !errors.Is(callErr, model.ErrInvalidRequest) || Code(callErr) != api.CodeInvalidRequest {
				t.Fatalf("model call = %v (code %q), want an invalid_request naming what the dialect does not take", callErr, Code(callErr))
			}
			recs := h.records(id)
			if n := len(ofKind(recs, api.KindModelCallStarted)); n != 1 {
				t.Errorf("%d model_call_started records, want 1 (the valid call only): %v", n, kinds(recs))
			}
			if failed := ofKind(recs, api.KindModelCallFailed); len(failed) != 1 ||
				decode[api.Failure](t, failed[0].Data).Code != api.CodeModelProviderFailed {
				t.Errorf("model_call_failed records %v, want the valid call's provider failure alone", kinds(recs))
			}
			if n := requests.Load() - before; n != 1 {
				t.Errorf("%d requests reached the provider, want 1 (the valid call)", n)
			}
		})
	}
}

// TestCreateRefusesAModelItCannotCall: a session whose response_format
// or tool names its provider cannot carry, whose provider is unknown, or
// whose key no request can carry is refused at create, before anything is
// journalled, rather than failing every model call later.
func TestCreateRefusesAModelItCannotCall(t *testing.T) {
	base, requests := countingProvider(t)
	models, err := model.New(model.Config{AnthropicBaseURL: base, OpenAIBaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Models: models}, nil)
	dotted := toolSession("ok")
	dotted.Model = api.ModelConfig{Provider: model.ProviderOpenAI, Name: "m"}
	dotted.Tools[0].Name = "fs.read"
	for name, req := range map[string]api.CreateSessionRequest{
		"openai tool fs.read":   dotted,
		"anthropic json_object": {Model: api.ModelConfig{Provider: model.ProviderAnthropic, Name: "m"}, ResponseFormat: json.RawMessage(`{"type":"json_object"}`)},
		"unknown provider":      {Model: api.ModelConfig{Provider: "antropic", Name: "m"}},
		"key with a line break": {Model: api.ModelConfig{Provider: model.ProviderOpenAI, Name: "m", APIKey: "sk-1\n"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.engine.Create(context.Background(), "", req)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Create = %v, want ErrInvalid", err)
			}
			if req.Model.APIKey != "" && strings.Contains(err.Error(), req.Model.APIKey) {
				t.Fatalf("the error names the key: %v", err)
			}
			if strings.Count(err.Error(), "model:") != 1 {
				t.Errorf("the error = %q, want the model named once", err)
			}
		})
	}
	sessions, err := h.engine.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 0 || requests.Load() != 0 {
		t.Fatalf("%d sessions created, %d requests sent; want none", len(sessions), requests.Load())
	}
	// A format the provider carries is accepted.
	h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: model.ProviderAnthropic, Name: "m"},
		ResponseFormat: json.RawMessage(`{"type":"json_schema","schema":{"type":"object"}}`)})
}
