package session

import (
	"context"
	"encoding/json"
	"fmt"
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

// The live frames of a model call come after its model_call_started and
// before its model_call_ended, also for a reader that lags behind: here
// every turn has ended before the first frame is read.
func TestLiveFramesOrderedAfterStartedBeforeEnded(t *testing.T) {
	h := newHarness(t, Config{IdleTTL: KeepIdle}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const turns = 5
	for i := range turns {
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"stream": true, "reply": fmt.Sprintf("a b c d e f %d", i)})}); err != nil {
			t.Fatal(err)
		}
	}
	started, ended := map[uint64]bool{}, map[uint64]bool{}
	frames, done := 0, 0
	for done < turns {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Event != nil {
			switch f.Event.EventType {
			case api.KindModelCallStarted:
				started[f.Event.Sequence] = true
			case api.KindModelCallEnded, api.KindModelCallFailed:
				var ref struct {
					Sequence uint64 `json:"sequence"`
				}
				_ = json.Unmarshal(f.Event.Data, &ref)
				ended[ref.Sequence] = true
			case api.KindTurnEnded:
				done++
			}
			continue
		}
		frames++
		var d struct {
			Seq uint64 `json:"model_call_sequence"`
		}
		if err := json.Unmarshal(f.Live.Data, &d); err != nil {
			t.Fatal(err)
		}
		if !started[d.Seq] || ended[d.Seq] {
			t.Fatalf("%s frame of model call %d: started seen %v, ended seen %v", f.Live.Type, d.Seq, started[d.Seq], ended[d.Seq])
		}
	}
	if frames < 3*turns {
		t.Fatalf("%d live frames for %d streamed calls", frames, turns)
	}
}
