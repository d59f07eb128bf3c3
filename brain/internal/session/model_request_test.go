package session

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/model"
)

// recordingModel answers every call with a short text and keeps the
// requests it received.
type recordingModel struct {
	mu   sync.Mutex
	reqs []model.Request
}

func (m *recordingModel) Call(_ context.Context, req model.Request, _ func(model.Delta)) (model.Result, error) {
	b, err := json.Marshal(req) // a copy the caller cannot change afterwards
	if err != nil {
		return model.Result{}, err
	}
	var kept model.Request
	if err := json.Unmarshal(b, &kept); err != nil {
		return model.Result{}, err
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, kept)
	n := len(m.reqs)
	m.mu.Unlock()
	return model.Result{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock("answer " + string(rune('0'+n)))}},
		StopReason: api.StopEndTurn}, nil
}

func (m *recordingModel) requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// rebuildRequest rebuilds the request of the model call that started
// with record started from the journal alone, as the record's format
// says: the saved transcript at the record's through_sequence with its
// delta applied, the fields its caller set, and, for a loop's call, the
// session's configuration at that sequence for the fields it left out.
func rebuildRequest(t *testing.T, recs []journal.Record, started journal.Record) api.ModelRequest {
	t.Helper()
	ms := decode[modelCallStarted](t, started.Data)
	st := newState()
	for _, r := range recs {
		if r.Sequence > ms.Context.ThroughSequence {
			break
		}
		if err := st.apply(r); err != nil {
			t.Fatalf("fold of record %d: %v", r.Sequence, err)
		}
	}
	if ms.Context.Delta.Keep > len(st.Transcript) {
		t.Fatalf("record %d keeps %d of %d saved messages", started.Sequence, ms.Context.Delta.Keep, len(st.Transcript))
	}
	app, err := st.appended(started.Sequence, ms.Context.Delta)
	if err != nil {
		t.Fatal(err)
	}
	req := api.ModelRequest{Messages: append(slices.Clone(st.Transcript[:ms.Context.Delta.Keep]), app...)}
	if o := ms.Request; o != nil {
		req.System, req.Tools, req.ResponseFormat, req.MaxOutputTokens, req.Options = o.System, o.Tools, o.ResponseFormat, o.MaxOutputTokens, o.Options
	}
	if ms.Tool == 0 { // a loop's call takes the session's defaults
		conf := st.Config
		if req.System == nil {
			sys := conf.System
			req.System = &sys
		}
		if req.Tools == nil {
			for _, tl := range conf.Tools {
				req.Tools = append(req.Tools, api.ToolDefinition{Name: tl.Name, Description: tl.Description, InputSchema: tl.InputSchema, OutputSchema: tl.OutputSchema})
			}
		}
		if req.ResponseFormat == nil {
			req.ResponseFormat = conf.ResponseFormat
		}
	}
	if len(req.Messages) != ms.Messages {
		t.Fatalf("record %d counts %d messages, the rebuilt request has %d", started.Sequence, ms.Messages, len(req.Messages))
	}
	return req
}

// TestModelRequestRebuiltFromJournal holds a model call's start record to
// what the seed asks of it: applying its delta to the saved transcript at
// its through_sequence, with the fields its caller set, rebuilds the exact
// request the model received, whether the loop took the session's
// defaults or set its own system prompt, tools (an empty list included),
// response format (a null reset included), output bound and options.
func TestModelRequestRebuiltFromJournal(t *testing.T) {
	rm := &recordingModel{}
	models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return rm, nil }}
	narrow := api.ToolDefinition{Name: "echo", Description: "a narrower echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}
	loops := map[string]agentloop.Func{"overrides": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		msgs := append(slices.Clone(in.Transcript), api.UserMessage(*in.Input))
		first, err := svc.Model(ctx, api.ModelRequest{Messages: msgs})
		if err != nil {
			return api.TurnOutput{}, err
		}
		if len(in.Transcript) == 0 {
			other, five := "another system prompt", int64(5)
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: msgs, System: &other, Tools: []api.ToolDefinition{},
				ResponseFormat: json.RawMessage(`null`), MaxOutputTokens: &five, Options: json.RawMessage(`{"temperature":0.2}`)}); err != nil {
				return api.TurnOutput{}, err
			}
			empty := ""
			if _, err := svc.Model(ctx, api.ModelRequest{Messages: append(slices.Clone(msgs), first.Message), System: &empty,
				Tools: []api.ToolDefinition{narrow}, ResponseFormat: json.RawMessage(`{"type":"text"}`)}); err != nil {
				return api.TurnOutput{}, err
			}
		}
		if _, err := svc.SetTranscript(ctx, append(msgs, first.Message)); err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{}, nil
	}}
	h := newHarness(t, Config{Models: models, Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("overrides")
	req.System = "the session's system prompt"
	req.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	id := h.create(req)
	for _, msg := range []string{"first", "second", "third"} {
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	recs := h.records(id)
	started := ofKind(recs, api.KindModelCallStarted)
	got := rm.requests()
	if len(started) != 5 || len(got) != 5 {
		t.Fatalf("%d model_call_started records and %d model calls, want 5 of each", len(started), len(got))
	}
	for i, r := range started {
		rebuilt, err := json.Marshal(rebuildRequest(t, recs, r))
		if err != nil {
			t.Fatal(err)
		}
		sent, err := json.Marshal(got[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rebuilt, sent) {
			t.Errorf("call %d (record %d): rebuilt from the journal\n  %s\nthe model received\n  %s", i+1, r.Sequence, rebuilt, sent)
		}
		// A call that sets nothing beyond its messages records nothing more.
		if defaults := i != 1 && i != 2; defaults == bytes.Contains(r.Data, []byte(`"request"`)) {
			t.Errorf("call %d (record %d) = %s", i+1, r.Sequence, r.Data)
		}
	}
	// The calls that set their own fields are told apart from the
	// session's defaults, and an empty tool list from none.
	if got[1].System == nil || *got[1].System != "another system prompt" || len(got[1].Tools) != 0 ||
		string(got[1].ResponseFormat) != "" && string(got[1].ResponseFormat) != "null" || got[1].MaxOutputTokens == nil || *got[1].MaxOutputTokens != 5 {
		t.Errorf("second call received %+v", got[1])
	}
	if len(got[0].Tools) != 1 || got[0].Tools[0].Description != "echo" || string(got[0].ResponseFormat) != `{"type":"json_object"}` {
		t.Errorf("first call received %+v, want the session's tools and format", got[0])
	}
	if len(got[2].Tools) != 1 || got[2].Tools[0].Description != "a narrower echo" || got[2].System == nil || *got[2].System != "" {
		t.Errorf("third call received %+v", got[2])
	}
	// The public event holds the same fields.
	page, err := h.engine.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Events {
		if ev.Sequence == started[1].Sequence {
			var pub modelCallStarted
			if err := json.Unmarshal(ev.Data, &pub); err != nil || pub.Request == nil || pub.Request.Tools == nil || len(pub.Request.Tools) != 0 ||
				string(pub.Request.ResponseFormat) != "null" || string(pub.Request.Options) != `{"temperature":0.2}` {
				t.Errorf("model_call_started event = %s (%v)", ev.Data, err)
			}
		}
	}
}
