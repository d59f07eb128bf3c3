package session

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// A streamed model call publishes live model_request, model_output and
// model_usage frames naming its model_call_started; none is journalled. A
// call that does not stream publishes none.
func TestLiveModelFrames(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"stream": true, "reply": "one two"}),
		Media: []api.Media{{Type: api.BlockImage, URL: "https://example.invalid/a.png"}}}); err != nil {
		t.Fatal(err)
	}
	var order []string
	var started uint64
	frames := map[string]json.RawMessage{}
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Event != nil {
			if f.Event.EventType == api.KindModelCallStarted {
				started = f.Event.Sequence
			}
			if f.Event.EventType == api.KindTurnEnded {
				break
			}
			continue
		}
		var d struct {
			Seq uint64 `json:"model_call_sequence"`
		}
		if err := json.Unmarshal(f.Live.Data, &d); err != nil || d.Seq == 0 || (started != 0 && d.Seq != started) {
			t.Fatalf("%s frame %s (model_call_started %d)", f.Live.Type, f.Live.Data, started)
		}
		if len(order) == 0 || order[len(order)-1] != f.Live.Type {
			order = append(order, f.Live.Type)
		}
		frames[f.Live.Type] = f.Live.Data
	}
	if want := []string{api.LiveModelRequest, api.LiveModelOutput, api.LiveModelUsage}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("live frames %v, want %v", order, want)
	}
	req := decode[struct {
		InputBytes  int      `json:"input_bytes"`
		MediaInputs []string `json:"media_inputs"`
	}](t, frames[api.LiveModelRequest])
	if req.InputBytes <= 0 || len(req.MediaInputs) != 1 || req.MediaInputs[0] != api.BlockImage {
		t.Errorf("model_request %s", frames[api.LiveModelRequest])
	}
	if usage := decode[map[string]json.RawMessage](t, frames[api.LiveModelUsage]); usage["usage"] == nil {
		t.Errorf("model_usage %s", frames[api.LiveModelUsage])
	}
	// Not streamed: no live frame before the turn ends.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "plain"}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Live != nil {
			t.Fatalf("live frame %s of a call that did not stream", f.Live.Type)
		}
		if f.Event.EventType == api.KindTurnEnded {
			break
		}
	}
	for _, r := range h.records(id) {
		if r.Kind == api.LiveModelRequest || r.Kind == api.LiveModelUsage || r.Kind == api.LiveModelOutput {
			t.Fatalf("live frame %s journalled", r.Kind)
		}
	}
}
