package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/model"
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

// A model_output frame carries the index of its delta among the call's
// deltas, from 0, so that a reader whose frames were dropped (live frames
// are best effort) can tell that text is missing and where. Here the
// subscriber reads nothing while the call streams far more deltas than
// are kept for it, then reads on while the call streams more.
func TestLiveOutputIndexShowsDroppedDeltas(t *testing.T) {
	const deltas = 4 * liveBuffer
	m := &burstModel{words: make([]string, deltas), burst: make(chan struct{}), seen: make(chan struct{})}
	var seenOnce sync.Once
	sawEnd := func() { seenOnce.Do(func() { close(m.seen) }) }
	defer sawEnd()
	for i := range m.words {
		m.words[i] = fmt.Sprintf("w%d ", i)
	}
	models := model.Providers{"scripted": func(model.Spec) (model.Client, error) { return m, nil }}
	h := newHarness(t, Config{IdleTTL: KeepIdle, Models: models}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	sub, err := h.engine.Subscribe(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	turn := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: "words"})
		turn <- err
	}()
	<-m.burst
	var indexes []int
	var words []string
	for {
		f, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f.Event != nil {
			if f.Event.EventType == api.KindTurnEnded {
				break
			}
			continue
		}
		if f.Live.Type != api.LiveModelOutput {
			continue
		}
		d := decode[struct {
			Index *int   `json:"index"`
			Delta string `json:"delta"`
		}](t, f.Live.Data)
		if d.Index == nil {
			t.Fatalf("model_output frame without an index: %s", f.Live.Data)
		}
		indexes = append(indexes, *d.Index)
		words = append(words, d.Delta)
		if d.Delta == "end " {
			sawEnd()
		}
	}
	if err := <-turn; err != nil {
		t.Fatal(err)
	}
	jumps := 0
	for i, n := range indexes {
		prev := -1
		if i > 0 {
			prev = indexes[i-1]
		}
		if n <= prev {
			t.Fatalf("delta indexes %v: not increasing at %d", indexes, i)
		}
		if n != prev+1 {
			jumps++
		}
		// The index names the delta: each is the word of its place.
		if want := "end "; n < deltas {
			want = m.words[n]
			if words[i] != want {
				t.Fatalf("delta of index %d is %q, want %q", n, words[i], want)
			}
		} else if words[i] != want {
			t.Fatalf("delta of index %d is %q, want %q", n, words[i], want)
		}
	}
	if len(indexes) >= deltas || jumps == 0 {
		t.Errorf("delta indexes %v: %d of the first %d deltas reached a subscriber that did not read, and no jump shows where deltas are missing", indexes, min(len(indexes), deltas), deltas)
	}
}

// burstModel streams its words, one delta each, then closes burst and
// streams "end " every millisecond until seen is closed, and answers the
// words.
type burstModel struct {
	words       []string
	burst, seen chan struct{}
}

func (m *burstModel) Call(ctx context.Context, _ model.Request, onDelta func(model.Delta)) (model.Result, error) {
	for _, w := range m.words {
		onDelta(model.Delta{Text: w})
	}
	close(m.burst)
	for {
		select {
		case <-m.seen:
			return model.Result{Message: api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{api.TextBlock(strings.Join(m.words, ""))}},
				StopReason: api.StopEndTurn}, nil
		case <-ctx.Done():
			return model.Result{}, context.Cause(ctx)
		case <-time.After(time.Millisecond):
			onDelta(model.Delta{Text: "end "})
		}
	}
}
