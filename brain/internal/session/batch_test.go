package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// A synchronous text turn costs two durable appends: turn_started,
// activation_started and model_call_started together (the model fence;
// the turn's start waits for it, as nobody is answered before the turn
// ends), and the model result, transcript and turn end together.
func TestTextTurnAppends(t *testing.T) {
	store := &countingStore{}
	h := wrappedHarness(t, Config{}, nil, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	id := h.create(api.CreateSessionRequest{})
	before := store.appends.Load()
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := store.appends.Load() - before; n != 2 {
		t.Errorf("a text turn made %d appends, want 2", n)
	}
	recs := h.records(id)
	want := []string{api.KindTurnStarted, api.KindActivationStarted, api.KindModelCallStarted, api.KindModelCallEnded,
		api.KindTranscriptDelta, api.KindActivationEnded, api.KindTurnEnded}
	got := kinds(recs[len(recs)-len(want):])
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("records %v, want %v", got, want)
		}
	}
	// Dense and in order.
	for i, r := range recs {
		if r.Sequence != uint64(i+1) {
			t.Fatalf("record %d has sequence %d", i, r.Sequence)
		}
	}
}

// Deferred records are durable before a caller outside the engine (Call)
// is answered, and within the coalescing window when nothing else commits.
func TestDeferredRecordsDurability(t *testing.T) {
	release := make(chan struct{})
	durableAtAnswer := make(chan bool, 1)
	var h *harness
	loops := map[string]agentloop.Func{
		"remote": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
			svc := a.(Services)
			out, err := svc.Call(ctx, "kv_put", json.RawMessage(`{"key":"k","value":1}`))
			if err != nil {
				return api.TurnOutput{}, err
			}
			var seq uint64
			_ = json.Unmarshal(out, &seq)
			recs, err := h.store.Read(ctx, h.sessionOf(svc), seq-1, 1, 0)
			durableAtAnswer <- err == nil && len(recs) == 1 && recs[0].Kind == api.KindKVSet
			return api.TurnOutput{}, nil
		},
		"native": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
			if _, err := a.KVPut(ctx, "k", json.RawMessage(`2`)); err != nil {
				return api.TurnOutput{}, err
			}
			<-release
			return api.TurnOutput{}, nil
		},
	}
	h = newHarness(t, Config{Loops: testLoops(loops)}, nil)
	remote := h.create(api.CreateSessionRequest{Agentloop: testLoop("remote")})
	if _, err := h.engine.Send(context.Background(), remote, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if !<-durableAtAnswer {
		t.Error("kv_set was not durable when Call answered")
	}

	native := h.create(api.CreateSessionRequest{Agentloop: testLoop("native")})
	after := uint64(len(h.records(native)))
	if _, err := h.engine.Submit(context.Background(), native, api.UserInput{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	// The loop keeps running; its kv_set still reaches the journal.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := h.store.Subscribe(ctx, native, after, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for {
		r, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("kv_set never became durable: %v", err)
		}
		if r.Kind == api.KindKVSet {
			break
		}
	}
	close(release)
	h.waitEvent(native, after, api.KindTurnEnded)
}

// sessionOf answers the session id of an execution.
func (h *harness) sessionOf(svc Services) string { return svc.(*execution).s.id }
