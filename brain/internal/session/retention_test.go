package session

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// A positive idle_ttl_ms keeps the session in memory after its turn and
// releases it once that interval has passed without work.
func TestPositiveIdleTTLRetainsThenReleases(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	ctx := context.Background()
	const ttl = time.Second
	ms := ttl.Milliseconds()
	id := h.create(api.CreateSessionRequest{IdleTTLMs: &ms})
	// Creation arms the same retention; wait until it lets go so that the
	// turn below is what holds the session.
	waitActive(t, h.engine, 0)
	sent := time.Now()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	n := h.engine.Active()
	if elapsed := time.Since(sent); n != 1 && elapsed < ttl {
		t.Fatalf("%d sessions in memory %v after a turn with idle_ttl_ms %d", n, elapsed, ms)
	}
	waitActive(t, h.engine, 0)
}

// waitActive polls until the engine holds n sessions in memory.
func waitActive(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.Active() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions in memory, want %d", e.Active(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Reading a released session (summary, transcript, event pages, a live
// subscription that has caught up) does not activate it, even when its
// idle policy would keep an activated session; a message does.
func TestReadsAndSubscriptionsDoNotActivate(t *testing.T) {
	dir := t.TempDir()
	h := openHarness(t, dir, Config{}, nil)
	keep := int64(0)
	id := h.create(api.CreateSessionRequest{IdleTTLMs: &keep})
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	last := uint64(len(h.records(id)))
	h.close()

	h = openHarness(t, dir, Config{}, nil)
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("%d sessions in memory after reopening", n)
	}
	if _, err := h.engine.Summary(ctx, id); err != nil {
		t.Fatal(err)
	}
	if tr, err := h.engine.Transcript(ctx, id); err != nil || len(tr.Messages) != 2 {
		t.Fatalf("transcript %+v: %v", tr, err)
	}
	if page, err := h.engine.Events(ctx, id, 0); err != nil || len(page.Events) == 0 {
		t.Fatalf("events %+v: %v", page, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	sub, err := h.engine.Subscribe(sctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seen uint64
	for seen < last {
		f, err := sub.Next(sctx)
		if err != nil {
			t.Fatalf("catching up: %v", err)
		}
		if f.Event != nil {
			seen = f.Event.Sequence
		}
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("reads and an open subscription activated %d sessions", n)
	}
	// A message activates it, and its idle policy keeps it; the open
	// subscription follows the new commits.
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "again"}); err != nil {
		t.Fatal(err)
	}
	if n := h.engine.Active(); n != 1 {
		t.Fatalf("a message left %d sessions in memory, want 1", n)
	}
	for {
		f, err := sub.Next(sctx)
		if err != nil {
			t.Fatalf("following: %v", err)
		}
		if f.Event != nil && f.Event.EventType == api.KindTurnEnded {
			break
		}
	}
}

// Reads do not extend a session's idle retention: a session polled for
// its summary, transcript and events more often than its idle_ttl_ms is
// still released once that interval has passed after its turn.
func TestReadsDoNotExtendIdleTTL(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	ms := ttl.Milliseconds()
	id := h.create(api.CreateSessionRequest{IdleTTLMs: &ms})
	waitActive(t, h.engine, 0)
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	for h.engine.Active() != 0 {
		if since := time.Since(ended); since > 5*ttl {
			t.Fatalf("session still in memory %v after its turn with idle_ttl_ms %d while being read", since, ms)
		}
		if _, err := h.engine.Summary(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine.Transcript(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine.Events(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl / 8)
	}
}

// An idle_ttl_ms longer than a time.Duration can hold (here about 585
// years) retains the session like any long interval; it does not wrap
// around to a release after a fraction of a millisecond.
func TestVeryLongIdleTTLRetains(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	ms := int64(18446744073710)
	id := h.create(api.CreateSessionRequest{IdleTTLMs: &ms})
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := h.engine.Active(); n != 1 {
		t.Fatalf("%d sessions in memory 100ms after a turn with idle_ttl_ms %d, want 1", n, ms)
	}
}

// A session whose creation failed is released at once whatever its
// idle_ttl_ms: it can never run again (only a delete is accepted), so
// there is no execution to retain.
func TestFailedCreationIsNotRetained(t *testing.T) {
	h := newHarness(t, Config{}, map[string]string{"box": "fail"})
	keep := int64(0)
	req := toolSession("echo")
	req.Model = api.ModelConfig{Provider: "scripted", Name: "test"}
	req.IdleTTLMs = &keep
	sum, err := h.engine.Create(context.Background(), "", req)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != api.StatusFailed {
		t.Fatalf("created session is %s, want failed", sum.Status)
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("%d sessions in memory after a failed creation with idle_ttl_ms 0", n)
	}
}
