package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestLongProviderErrorIsRecordedBounded: an OpenAI Responses stream
// whose error event carries a message of hundreds of kilobytes fails the
// turn with the head of that message, cut between characters and marked
// as cut, at most 4096 bytes, in model_call_failed, activation_failed,
// turn_failed and the answer alike: the failure does not write the whole
// message into the journal three times over.
func TestLongProviderErrorIsRecordedBounded(t *testing.T) {
	long := strings.Repeat("сбой модели ", 20000) // 2-byte characters, ~400 KB
	frame, err := json.Marshal(map[string]any{"type": "error", "code": "server_error", "message": long})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: response.created\n"+
			`data: {"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`+"\n\n"+
			"event: error\ndata: "+string(frame)+"\n\n")
	}))
	t.Cleanup(srv.Close)
	models, err := model.New(model.Config{OpenAIBaseURL: srv.URL + "/v1", Limits: model.Limits{MaxFrameBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Models: models}, nil)
	id := h.create(api.CreateSessionRequest{Model: api.ModelConfig{Provider: model.ProviderOpenAI, Name: "gpt-test", APIKey: "sk-test-1"}})
	_, err = h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"})
	var te *TurnError
	if !errors.As(err, &te) || te.Code != api.CodeModelProviderFailed {
		t.Fatalf("Send = %v, want a %s turn error", err, api.CodeModelProviderFailed)
	}
	check := func(what, msg string) {
		t.Helper()
		if len(msg) > maxFailureMessage || !utf8.ValidString(msg) {
			t.Errorf("%s message: %d bytes (valid UTF-8: %v), want at most %d, cut between characters", what, len(msg), utf8.ValidString(msg), maxFailureMessage)
		}
		if !strings.Contains(msg, long[:1000]) || !strings.Contains(msg, "cut") || len(msg) < maxFailureMessage-64 {
			t.Errorf("%s message does not keep the head of the provider's message and say it was cut: %.80q ... %q", what, msg, msg[max(0, len(msg)-80):])
		}
	}
	recs := h.records(id)
	var call api.Failure
	for _, kind := range []string{api.KindModelCallFailed, api.KindActivationFailed, api.KindTurnFailed} {
		fs := ofKind(recs, kind)
		if len(fs) != 1 {
			t.Fatalf("%d %s records, want 1", len(fs), kind)
		}
		f := decode[api.Failure](t, fs[0].Data)
		check(kind, f.Message)
		if kind == api.KindModelCallFailed {
			call = f
		} else if f.Message != call.Message {
			t.Errorf("%s message differs from model_call_failed's", kind)
		}
	}
	check("answer", APIError(err).Message)
	if APIError(err).Message != call.Message {
		t.Errorf("the answer's message differs from model_call_failed's")
	}
	// The model client keeps only the head of the message, and the
	// failure reads as the whole message cut here would.
	if whole := "model: provider failed: server_error: " + long; call.Message != boundMessage(whole) {
		t.Errorf("model_call_failed message ends %q, want %q", call.Message[max(0, len(call.Message)-60):], boundMessage(whole)[len(boundMessage(whole))-60:])
	}
	total := 0
	for _, r := range recs {
		total += len(r.Data)
	}
	if total > 64<<10 {
		t.Errorf("the failed turn wrote %d bytes of records for a %d-byte provider message", total, len(long))
	}
}

// TestLongToolErrorIsRecordedBounded: a provider that finishes a tool call
// as failed with an error message of hundreds of kilobytes has the call
// recorded failed with the head of that message, marked as cut, at most
// 4096 bytes; the loop woken with the result carries no more of it into
// the transcript.
func TestLongToolErrorIsRecordedBounded(t *testing.T) {
	h, id := returnerSession(t, func(fs journal.Store) journal.Store { return fs })
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	ops := h.envs.opsOf(envapi.RequestExecute)
	if len(ops) != 1 {
		t.Fatalf("executes sent: %+v", ops)
	}
	svc, err := h.engine.Execution(id, ops[0].Sequence)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("ошибка инструмента ", 20000) // ~700 KB
	finish, err := json.Marshal(api.Outcome{Status: api.OutcomeFailed, Error: &api.OutcomeError{Code: "tool_broke", Message: long}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := svc.Call(ctx, envapi.MethodFinish, finish)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	if err := json.Unmarshal(out, &seq); err != nil {
		t.Fatal(err)
	}
	ended := ofKind(h.records(id), api.KindToolCallEnded)
	if len(ended) != 1 {
		t.Fatalf("%d tool_call_ended records, want 1", len(ended))
	}
	o := decode[api.ToolCallEnded](t, ended[0].Data).Outcome
	if o.Error == nil || o.Error.Code != "tool_broke" {
		t.Fatalf("tool_call_ended outcome %+v, want failed tool_broke", o)
	}
	msg := o.Error.Message
	if len(msg) > maxFailureMessage || !utf8.ValidString(msg) || !strings.HasPrefix(msg, long[:1000]) || !strings.Contains(msg, "cut") {
		t.Errorf("tool_call_ended error message: %d bytes (valid UTF-8: %v), %.60q ... %q; want the head of the tool's message, cut between characters and marked, at most %d bytes",
			len(msg), utf8.ValidString(msg), msg, msg[max(0, len(msg)-60):], maxFailureMessage)
	}
	h.waitEvent(id, seq, api.KindActivationEnded)
	tr, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tr)
	if len(b) > 64<<10 {
		t.Errorf("the transcript holds %d bytes after a %d-byte tool error", len(b), len(long))
	}
}
