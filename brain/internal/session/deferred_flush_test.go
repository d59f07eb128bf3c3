package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Deferred records whose coalesced flush was refused (a full disk) are
// flushed again once the store takes appends, without waiting for another
// commit of the session.
func TestDeferredFlushRetriedAfterRefusal(t *testing.T) {
	h, store := refusingHarness(t, Config{IdleTTL: KeepIdle}, nil)
	id := h.create(api.CreateSessionRequest{})
	before := len(h.records(id))
	holdRefused(t, h, store, id)
	deadline := time.Now().Add(10 * time.Second)
	for store.refused.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the deferred record was never flushed")
		}
		time.Sleep(time.Millisecond)
	}
	store.failing.Store(false)
	for len(h.records(id)) == before {
		if time.Now().After(deadline) {
			t.Fatal("the deferred record is still not durable after the store took appends again")
		}
		time.Sleep(5 * time.Millisecond)
	}
	recs := h.records(id)
	if len(recs) != before+1 || recs[before].Kind != api.KindKVSet {
		t.Fatalf("records after the flush: %v", kinds(recs))
	}
}

// A session's noted write failure is forgotten once nothing can need it:
// when its creation was refused (nothing of it is durable), when a reload
// finds nothing open to close, and when it is deleted.
func TestWriteFaultsForgotten(t *testing.T) {
	h, store := refusingHarness(t, Config{IdleTTL: KeepIdle}, nil)
	faults := func() int {
		h.engine.mu.Lock()
		defer h.engine.mu.Unlock()
		return len(h.engine.faults)
	}
	ctx := context.Background()
	store.failing.Store(true)
	for range 3 {
		if _, err := h.engine.Create(ctx, "", api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "test"}}); !errors.Is(err, journal.ErrWrite) {
			t.Fatalf("Create on a full disk = %v, want journal.ErrWrite", err)
		}
	}
	if n := faults(); n != 0 {
		t.Errorf("%d write failures kept after refused creations, want none", n)
	}
	store.failing.Store(false)

	// A refused flush of deferred records leaves nothing open.
	id := h.create(api.CreateSessionRequest{})
	h.engine.mu.Lock()
	s := h.engine.live[id]
	h.engine.mu.Unlock()
	store.failing.Store(true)
	s.mu.Lock()
	if _, err := s.deferLocked(rec(api.KindKVSet, kvSet{Key: "k", Value: json.RawMessage(`1`)})); err != nil {
		s.mu.Unlock()
		t.Fatal(err)
	}
	if err := s.flushLocked(); !errors.Is(err, journal.ErrWrite) {
		s.mu.Unlock()
		t.Fatalf("flush on a full disk = %v", err)
	}
	s.faulted = true
	s.mu.Unlock()
	store.failing.Store(false)
	if h.engine.fault(id, false) == "" {
		t.Fatal("the refused flush was not noted")
	}
	// The next write reloads the faulted session from the journal.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := faults(); n != 0 {
		t.Errorf("%d write failures kept after a reload found nothing open, want none", n)
	}

	// A deleted session's failure goes with it.
	id2 := h.create(api.CreateSessionRequest{})
	h.engine.noteFault(id2, fmt.Errorf("%w: no space left on device", journal.ErrWrite))
	if _, err := h.engine.End(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Delete(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if n := faults(); n != 0 {
		t.Errorf("%d write failures kept after Delete, want none", n)
	}
}
