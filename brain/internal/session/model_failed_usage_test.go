package session

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// TestModelCallFailedKeepsUsage: an Anthropic stream that breaks off after
// message_start fails the call, and model_call_failed keeps the input usage
// the provider had reported, marked incomplete; the API key appears in no
// record.
func TestModelCallFailedKeepsUsage(t *testing.T) {
	const key = "sk-ant-test-7d1e0b"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: message_start\n"+
			`data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":4,"output_tokens":1}}}`+"\n\n"+
			"event: content_block_start\n"+
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
			"event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`+"\n\n")
	}))
	t.Cleanup(srv.Close)
	models, err := model.New(model.Config{AnthropicBaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Models: models}, nil)
	id := h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: model.ProviderAnthropic, Name: "claude-test", APIKey: key}})
	_, err = h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed {
		t.Fatalf("Send = %v, want a %s turn error", err, api.CodeModelProviderFailed)
	}
	recs := h.records(id)
	failedCalls := ofKind(recs, api.KindModelCallFailed)
	if len(failedCalls) != 1 {
		t.Fatalf("%d model_call_failed records, want 1", len(failedCalls))
	}
	got := decode[struct {
		Code     string `json:"code"`
		Response *struct {
			Usage         api.Usage `json:"usage"`
			UsageComplete *bool     `json:"usage_complete"`
		} `json:"response"`
	}](t, failedCalls[0].Data)
	if got.Response == nil || got.Response.UsageComplete == nil {
		t.Fatalf("model_call_failed %s keeps no response usage", failedCalls[0].Data)
	}
	u := got.Response.Usage
	if *got.Response.UsageComplete || u.InputTokens == nil || *u.InputTokens != 21 || u.TotalInputTokens == nil || *u.TotalInputTokens != 25 {
		t.Errorf("model_call_failed %s: want 21 uncached of 25 input tokens, usage_complete false", failedCalls[0].Data)
	}
	for _, r := range recs {
		if strings.Contains(string(r.Data), key) {
			t.Errorf("record %d (%s) holds the API key", r.Sequence, r.Kind)
		}
	}
}

// TestModelCallFailedKeepsRetryAfter: a 429 with Retry-After from the
// OpenAI Responses API is recorded retryable with the wait the provider
// asked for, and the call was sent once.
func TestModelCallFailedKeepsRetryAfter(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-test","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	}))
	t.Cleanup(srv.Close)
	models, err := model.New(model.Config{OpenAIBaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Models: models}, nil)
	id := h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: model.ProviderOpenAI, Name: "gpt-test", APIKey: "sk-test-1"}})
	_, err = h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed || !te.Retryable {
		t.Fatalf("Send = %v, want a retryable %s turn error", err, api.CodeModelProviderFailed)
	}
	failedCalls := ofKind(h.records(id), api.KindModelCallFailed)
	if len(failedCalls) != 1 {
		t.Fatalf("%d model_call_failed records, want 1", len(failedCalls))
	}
	f := decode[api.Failure](t, failedCalls[0].Data)
	details := decode[map[string]any](t, f.Details)
	if details["provider_code"] != "rate_limit_exceeded" || details["retry_after_ms"] != float64(20000) || !f.Retryable {
		t.Errorf("model_call_failed %s: want provider_code rate_limit_exceeded, retry_after_ms 20000, retryable", failedCalls[0].Data)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the provider was called %d times, want once", n)
	}
}
