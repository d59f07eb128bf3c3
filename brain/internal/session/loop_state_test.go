package session

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

func texts(msgs []api.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

func userMessages(texts ...string) []api.Message {
	out := make([]api.Message, len(texts))
	for i, s := range texts {
		out[i] = api.UserMessage(api.UserInput{Message: s})
	}
	return out
}

// recordsAfter answers the records of session id after sequence after.
func recordsAfter(h *harness, id string, after uint64) []journal.Record {
	h.t.Helper()
	return h.records(id)[after:]
}

// A loop's kv_put and set_transcript are committed although the turn then
// fails: they are read back by the engine and after reopening the store.
func TestLoopWritesSurviveFailedTurn(t *testing.T) {
	errLoop := errors.New("loop gave up")
	var seenKV map[string]json.RawMessage
	loops := map[string]agentloop.Func{"writes": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		if in.Input.Message == "look" {
			seenKV = in.KV
			return api.TurnOutput{}, nil
		}
		if _, err := svc.KVPut(ctx, "k", json.RawMessage(`{"v":1}`)); err != nil {
			return api.TurnOutput{}, err
		}
		if _, err := svc.SetTranscript(ctx, append(in.Transcript, userMessages(in.Input.Message, "kept")...)); err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{}, errLoop
	}}
	dir := t.TempDir()
	h := openHarness(t, dir, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("writes")})
	ctx := context.Background()
	before := uint64(len(h.records(id)))
	_, err := h.engine.Send(ctx, id, api.UserInput{Message: "go"})
	var te *TurnError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), errLoop.Error()) {
		t.Fatalf("send = %v, want the loop's failure", err)
	}
	got := kinds(recordsAfter(h, id, before))
	want := []string{"turn_started", "activation_started", "kv_set", "transcript_delta", "activation_failed", "turn_failed"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("turn records = %v, want %v", got, want)
	}
	check := func(h *harness, stage string) {
		t.Helper()
		tr, err := h.engine.Transcript(ctx, id)
		if err != nil || !reflect.DeepEqual(texts(tr.Messages), []string{"go", "kept"}) {
			t.Fatalf("%s: transcript %q: %v", stage, texts(tr.Messages), err)
		}
		seenKV = nil
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "look"}); err != nil {
			t.Fatal(err)
		}
		if v, ok := seenKV["k"]; !ok || string(v) != `{"v":1}` {
			t.Fatalf("%s: kv seen by the next turn = %s", stage, seenKV)
		}
	}
	check(h, "same engine")
	h.close()
	check(openHarness(t, dir, Config{Loops: testLoops(loops)}, nil), "reopened")
}

// set_transcript commits the difference from the saved transcript: an
// append stores only the tail; an edit, a reorder or a summary restarts
// at the first changed message. Reading back (also after reopening)
// answers the saved messages.
func TestTranscriptDeltaRestartsAtFirstChange(t *testing.T) {
	loops := map[string]agentloop.Func{"save": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		_, err := svc.SetTranscript(ctx, userMessages(strings.Split(in.Input.Message, ",")...))
		return api.TurnOutput{}, err
	}}
	dir := t.TempDir()
	h := openHarness(t, dir, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("save")})
	ctx := context.Background()
	steps := []struct {
		save   string
		keep   int
		append []string
	}{
		{"a,b,c,d", 0, []string{"a", "b", "c", "d"}},
		{"a,b,c,d,e", 4, []string{"e"}},                // append
		{"a,b,X,d,e", 2, []string{"X", "d", "e"}},      // edit
		{"a,d,b,X,e", 1, []string{"d", "b", "X", "e"}}, // reorder
		{"S,e", 0, []string{"S", "e"}},                 // summary
	}
	for _, step := range steps {
		before := uint64(len(h.records(id)))
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: step.save}); err != nil {
			t.Fatal(err)
		}
		deltas := ofKind(recordsAfter(h, id, before), api.KindTranscriptDelta)
		if len(deltas) != 1 {
			t.Fatalf("saving %s: %d transcript_delta records", step.save, len(deltas))
		}
		d := decode[transcriptDelta](t, deltas[0].Data)
		if d.Keep != step.keep || !reflect.DeepEqual(texts(d.Append), step.append) {
			t.Fatalf("saving %s: delta keeps %d appending %q, want %d appending %q", step.save, d.Keep, texts(d.Append), step.keep, step.append)
		}
		tr, err := h.engine.Transcript(ctx, id)
		if err != nil || strings.Join(texts(tr.Messages), ",") != step.save {
			t.Fatalf("saved %s, read back %q: %v", step.save, texts(tr.Messages), err)
		}
	}
	h.close()
	h = openHarness(t, dir, Config{Loops: testLoops(loops)}, nil)
	tr, err := h.engine.Transcript(ctx, id)
	if last := steps[len(steps)-1].save; err != nil || strings.Join(texts(tr.Messages), ",") != last {
		t.Fatalf("reopened transcript %q, want %s: %v", texts(tr.Messages), last, err)
	}
}

// A model call, whatever its messages and result, leaves the saved
// transcript as it was: the turn records no transcript_delta.
func TestModelCallLeavesTranscript(t *testing.T) {
	loops := map[string]agentloop.Func{"ask": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		msgs := append(in.Transcript[:len(in.Transcript):len(in.Transcript)], api.UserMessage(*in.Input))
		res, err := svc.Model(ctx, api.ModelRequest{Messages: msgs})
		if err != nil {
			return api.TurnOutput{}, err
		}
		return api.TurnOutput{Result: json.RawMessage(mustJSON(res.Message.Text()))}, nil
	}}
	h := newHarness(t, Config{Loops: testLoops(loops)}, nil)
	id := h.create(api.CreateSessionRequest{Agentloop: testLoop("ask"), Transcript: userMessages("seed")})
	ctx := context.Background()
	saved, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	before := uint64(len(h.records(id)))
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	recs := recordsAfter(h, id, before)
	if len(ofKind(recs, api.KindModelCallEnded)) != 1 || len(ofKind(recs, api.KindTranscriptDelta)) != 0 {
		t.Fatalf("turn records = %v, want a model call and no transcript_delta", kinds(recs))
	}
	if te := decode[turnEnded](t, ofKind(recs, api.KindTurnEnded)[0].Data); string(te.Result) != `"echo: hi"` {
		t.Fatalf("turn result %s", te.Result)
	}
	tr, err := h.engine.Transcript(ctx, id)
	if err != nil || !reflect.DeepEqual(texts(tr.Messages), texts(saved.Messages)) {
		t.Fatalf("transcript after a model call %q, saved %q: %v", texts(tr.Messages), texts(saved.Messages), err)
	}
}
