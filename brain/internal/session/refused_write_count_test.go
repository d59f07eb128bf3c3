package session

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// Each retry of a deferred flush the journal refused (a full disk) is one
// append: a session with nothing running asks the journal once per retry,
// not once more for its idle check.
func TestDeferredFlushRetryAppendsOnce(t *testing.T) {
	h, store := refusingHarness(t, Config{IdleTTL: KeepIdle}, nil)
	id := h.create(api.CreateSessionRequest{})
	s := holdRefused(t, h, store, id)
	deadline := time.Now().Add(10 * time.Second)
	for store.refused.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the deferred record's flush was not retried")
		}
		time.Sleep(time.Millisecond)
	}
	// Under the session's lock no retry runs: every retry refused so far
	// doubled the wait before the next one.
	s.mu.Lock()
	wait, appends := s.flushWait, store.refused.Load()
	s.mu.Unlock()
	store.failing.Store(false)
	if wait >= maxFlushWait {
		t.Fatalf("retries could not be counted: the wait reached %v", wait)
	}
	retries := int64(0)
	for w := CoalesceWindow; w < wait; w *= 2 {
		retries++
	}
	if appends != retries {
		t.Fatalf("%d refused appends for %d retries of the flush, want one each", appends, retries)
	}
	for {
		recs := h.records(id)
		if n := len(recs); n > 0 && recs[n-1].Kind == api.KindKVSet {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deferred record is not durable after the store took appends again")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A session whose turn end the journal refused (a full disk) leaves
// memory without writing a checkpoint: its projection reaches past the
// journal's end, which no store takes a checkpoint through. Once the
// journal takes records again the session runs its next turn.
func TestFaultedSessionEvictedWithoutCheckpoint(t *testing.T) {
	h, store := refusingHarness(t, Config{CheckpointEvery: 1}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{"delay_ms": 300, "reply": "r"})})
		done <- err
	}()
	h.waitEvent(id, 0, api.KindModelCallStarted)
	before := store.ckpts.Load()
	store.failing.Store(true)
	if err := <-done; !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send whose end the journal refused = %v, want journal.ErrWrite", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.engine.mu.Lock()
		s := h.engine.live[id]
		h.engine.mu.Unlock()
		if s == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the faulted session stays in memory")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := store.ckpts.Load() - before; n != 0 {
		t.Errorf("%d checkpoint writes for the faulted session leaving memory, want none", n)
	}
	store.failing.Store(false)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "again"}); err != nil {
		t.Fatalf("next turn once the journal takes records: %v", err)
	}
}
