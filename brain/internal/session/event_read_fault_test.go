package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// failRead fails the first read of the record at sequence seq alone (set
// by the test), as storage that fails for a moment does.
type failRead struct {
	journal.Store
	seq    atomic.Uint64
	failed atomic.Bool
}

func (f *failRead) Read(ctx context.Context, id string, after uint64, maxRecords, maxBytes int) ([]journal.Record, error) {
	if seq := f.seq.Load(); seq != 0 && after == seq-1 && maxRecords == 1 && f.failed.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("read segment: %w", errors.New("input/output error"))
	}
	return f.Store.Read(ctx, id, after, maxRecords, maxBytes)
}

// An activation whose pending result cannot be read from the journal
// (storage failing for a moment) fails, leaving the result pending,
// rather than ending as if its loop had been handed the result: the next
// message's activation is handed it.
func TestUnreadableEventFailsActivation(t *testing.T) {
	var mu sync.Mutex
	var handed [][]uint64
	loops := map[string]agentloop.Func{"note": func(ctx context.Context, svc agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
		var seqs []uint64
		for _, ev := range in.Events {
			seqs = append(seqs, ev.Sequence)
		}
		mu.Lock()
		handed = append(handed, seqs)
		mu.Unlock()
		return api.TurnOutput{}, nil
	}}
	store := &failRead{}
	h := wrappedHarness(t, Config{Loops: testLoops(loops), IdleTTL: KeepIdle}, map[string]string{"box": "echo"},
		func(fs journal.Store) journal.Store { store.Store = fs; return store })
	req := toolSession("echo")
	req.Agentloop = testLoop("note")
	id := h.create(req)
	ctx := context.Background()
	// The result is the next record: its first read fails.
	sum, err := h.engine.Summary(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	store.seq.Store(sum.LastSequence + 1)
	seq := h.reportLost(id, api.EnvironmentRef{Name: "box", Sequence: 1})
	if seq != sum.LastSequence+1 {
		t.Fatalf("the result is record %d, want %d", seq, sum.LastSequence+1)
	}
	woken := h.waitEvent(id, seq, api.KindActivationStarted)
	time.Sleep(20 * CoalesceWindow)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := append([][]uint64(nil), handed...)
	mu.Unlock()
	if len(got) == 0 || !reflect.DeepEqual(got[len(got)-1], []uint64{seq}) {
		t.Fatalf("activations were handed %v: the message's was not handed result %d, which no loop saw", got, seq)
	}
	for _, r := range ofKind(h.records(id), api.KindActivationFailed) {
		if f := decode[api.Failure](t, r.Data); f.Sequence == woken.Sequence && !f.Retryable {
			t.Errorf("activation %d failed %+v, want a retryable failure", woken.Sequence, f)
		}
	}
}
