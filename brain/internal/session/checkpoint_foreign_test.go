package session

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// firstReads notes, per session, the cursor of the first journal Read.
type firstReads struct {
	journal.Store
	mu    sync.Mutex
	after map[string]uint64
}

func (f *firstReads) Read(ctx context.Context, id string, after uint64, maxRecords, maxBytes int) ([]journal.Record, error) {
	f.mu.Lock()
	if _, ok := f.after[id]; !ok {
		f.after[id] = after
	}
	f.mu.Unlock()
	return f.Store.Read(ctx, id, after, maxRecords, maxBytes)
}

// A checkpoint is a projection of its own session's journal: one copied
// from another session, even one whose journal has the same shape (the
// same number of records of the same sizes), is not used; the session
// is read from its own journal. A session's own checkpoint still is.
func TestCheckpointOfAnotherSessionIgnored(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := openHarness(t, dir, Config{CheckpointEvery: 8}, nil)
	a := h.create(api.CreateSessionRequest{})
	b := h.create(api.CreateSessionRequest{})
	for i := 0; i < 5; i++ {
		if _, err := h.engine.Send(ctx, a, api.UserInput{Message: "aaaa"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine.Send(ctx, b, api.UserInput{Message: "bbbb"}); err != nil {
			t.Fatal(err)
		}
	}
	wantA, err := h.engine.Transcript(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	wantB, err := h.engine.Transcript(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	h.close()

	cp, err := os.ReadFile(filepath.Join(dir, a, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, b, "checkpoint"), cp, 0o600); err != nil {
		t.Fatal(err)
	}

	h = openHarness(t, dir, Config{CheckpointEvery: 8}, nil)
	_ = h.engine.Close(ctx)
	fr := &firstReads{Store: h.store, after: map[string]uint64{}}
	e, err := New(Config{Store: fr, CheckpointEvery: 8, Environments: h.envs, Secrets: h.secret})
	if err != nil {
		t.Fatal(err)
	}
	h.engine, h.envs.engine = e, e

	got, err := h.engine.Transcript(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantB) {
		t.Fatalf("transcript of %s after its checkpoint was replaced by %s's:\n got %+v\nwant %+v", b, a, got.Messages, wantB.Messages)
	}
	got, err = h.engine.Transcript(ctx, a)
	if err != nil || !reflect.DeepEqual(got, wantA) {
		t.Fatalf("transcript of %s = %+v, %v; want %+v", a, got.Messages, err, wantA.Messages)
	}
	if after, read := fr.after[a]; read && after == 0 {
		t.Errorf("%s was folded from its start, not from its own checkpoint", a)
	}
}
