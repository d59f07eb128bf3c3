package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// refusingStore refuses every append with journal.ErrWrite while failing
// is set, as a disk that has just filled up. It counts the appends it
// refused and the checkpoints written through it.
type refusingStore struct {
	journal.Store
	failing atomic.Bool
	refused atomic.Int64
	ckpts   atomic.Int64
}

func (f *refusingStore) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	if f.failing.Load() {
		f.refused.Add(1)
		return fmt.Errorf("%w: no space left on device", journal.ErrWrite)
	}
	return f.Store.Append(ctx, session, expectedNext, records)
}

func (f *refusingStore) WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error {
	f.ckpts.Add(1)
	return f.Store.WriteCheckpoint(ctx, session, through, payload)
}

// refusingHarness is wrappedHarness(t, cfg, envs) over a real file
// journal seen through a refusingStore, which it answers with the
// harness; the store takes appends until its failing is set.
func refusingHarness(t *testing.T, cfg Config, envs map[string]string) (*harness, *refusingStore) {
	t.Helper()
	store := &refusingStore{}
	h := wrappedHarness(t, cfg, envs, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	return h, store
}

// holdRefused makes store refuse appends and holds a KV record of the
// session id, in memory, for its next append, as a loop's write while
// the disk is full; it answers the session.
func holdRefused(t *testing.T, h *harness, store *refusingStore, id string) *sess {
	t.Helper()
	h.engine.mu.Lock()
	s := h.engine.live[id]
	h.engine.mu.Unlock()
	if s == nil {
		t.Fatal("session not in memory")
	}
	store.failing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.deferLocked(rec(api.KindKVSet, kvSet{Key: "k", Value: json.RawMessage(`1`)})); err != nil {
		t.Fatal(err)
	}
	return s
}
