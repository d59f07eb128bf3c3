package session

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
)

// readCounter counts the reads a reactivation makes.
type readCounter struct {
	journal.Store
	reads, ckptReads, ckptWrites atomic.Int64
}

func (c *readCounter) Read(ctx context.Context, session string, after uint64, maxRecords, maxBytes int) ([]journal.Record, error) {
	c.reads.Add(1)
	return c.Store.Read(ctx, session, after, maxRecords, maxBytes)
}

func (c *readCounter) ReadCheckpoint(ctx context.Context, session string) (uint64, []byte, error) {
	c.ckptReads.Add(1)
	return c.Store.ReadCheckpoint(ctx, session)
}

func (c *readCounter) WriteCheckpoint(ctx context.Context, session string, through uint64, payload []byte) error {
	c.ckptWrites.Add(1)
	return c.Store.WriteCheckpoint(ctx, session, through, payload)
}

func countingHarness(t *testing.T, cfg Config) (*harness, *readCounter) {
	t.Helper()
	h := newHarness(t, Config{}, nil)
	_ = h.engine.Close(context.Background())
	rc := &readCounter{Store: h.store}
	cfg.Store, cfg.Environments, cfg.Secrets = rc, h.envs, h.secret
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.engine, h.envs.engine = e, e
	return h, rc
}

// A released session's projection is handed back on its next message
// without reading the journal, and equals the fold of the journal.
func TestReleasedProjectionReused(t *testing.T) {
	h, rc := countingHarness(t, Config{})
	ctx := context.Background()
	id := h.create(api.CreateSessionRequest{})
	for i := 0; i < 3; i++ {
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.engine.Active(); n != 0 {
		t.Fatalf("%d sessions active after the turns", n)
	}
	if n := rc.reads.Load() + rc.ckptReads.Load(); n != 0 {
		t.Fatalf("reactivations read the journal %d times", n)
	}
	got, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := New(Config{Store: h.store, ReleasedBytes: -1, Secrets: h.secret})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	want, err := fresh.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.Messages) != 6 {
		t.Fatalf("kept projection differs from the journal's fold:\n%+v\n%+v", got, want)
	}
	sum, _ := h.engine.Summary(ctx, id)
	wantSum, _ := fresh.Summary(ctx, id)
	if sum != wantSum {
		t.Fatalf("summary %+v, journal fold %+v", sum, wantSum)
	}
}

// A kept projection is not used when the journal no longer ends where it
// does; the session is folded from the journal instead.
func TestReleasedProjectionStale(t *testing.T) {
	h, rc := countingHarness(t, Config{})
	ctx := context.Background()
	id := h.create(api.CreateSessionRequest{})
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	next, err := h.store.Next(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	extra := rec(api.KindTranscriptDelta, delta(nil, []api.Message{api.UserMessage(api.UserInput{Message: "written elsewhere"})}))
	if err := h.store.Append(ctx, id, next, []journal.Record{extra}); err != nil {
		t.Fatal(err)
	}
	got, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || got.Messages[0].Content[0].Text != "written elsewhere" || got.ThroughSequence != next {
		t.Fatalf("stale projection used: %+v", got)
	}
	if rc.reads.Load() == 0 {
		t.Fatal("the journal was not read")
	}
}

// The kept projections stay within their bound, and Delete forgets one.
func TestReleasedBound(t *testing.T) {
	h, _ := countingHarness(t, Config{ReleasedBytes: 16 << 10})
	ctx := context.Background()
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = h.create(api.CreateSessionRequest{})
	}
	e := h.engine
	e.mu.Lock()
	n, used := e.released.len(), e.released.used
	e.mu.Unlock()
	if n == 0 || n >= len(ids) || used > 16<<10 {
		t.Fatalf("%d projections kept in %d bytes (bound 16 KiB)", n, used)
	}
	last := ids[len(ids)-1]
	if _, err := e.End(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, last); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	_, kept := e.released.byID[last]
	e.mu.Unlock()
	if kept {
		t.Fatal("a deleted session's projection is kept")
	}
	if _, err := e.Summary(ctx, last); !isNotFound(err) {
		t.Fatalf("summary of a deleted session: %v", err)
	}
}

// A session reloaded from its checkpoint does not write it again until
// CheckpointEvery more records are committed.
func TestCheckpointNotRewrittenOnReload(t *testing.T) {
	h, rc := countingHarness(t, Config{CheckpointEvery: 8, ReleasedBytes: -1})
	ctx := context.Background()
	id := h.create(api.CreateSessionRequest{})
	turns := 12 // 7 records a turn
	for i := 0; i < turns; i++ {
		if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, max := rc.ckptWrites.Load(), int64(7*turns/8+1); n > max {
		t.Fatalf("%d checkpoints written for %d records (at most %d expected)", n, 7*turns, max)
	}
}

// Sessions that take turns in a cycle longer than the bound holds still
// find a share of their projections kept: a full cycle does not push out
// each one just before its next message (as least-recently-released-first
// would, so that every message reloaded its session from the checkpoint).
func TestReleasedCycleKeepsAShare(t *testing.T) {
	ctx := context.Background()
	const sessions, rounds = 16, 4
	// The bound: what the sessions take after their first turn, which
	// they outgrow from their second on.
	probe, _ := countingHarness(t, Config{})
	pid := probe.create(api.CreateSessionRequest{})
	if _, err := probe.engine.Send(ctx, pid, api.UserInput{Message: "m"}); err != nil {
		t.Fatal(err)
	}
	probe.engine.mu.Lock()
	one := probe.engine.released.used
	probe.engine.mu.Unlock()
	bound := one * sessions

	h, rc := countingHarness(t, Config{ReleasedBytes: bound})
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = h.create(api.CreateSessionRequest{})
		if _, err := h.engine.Send(ctx, ids[i], api.UserInput{Message: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	reloads := rc.ckptReads.Load()
	for r := 0; r < rounds; r++ {
		for _, id := range ids {
			if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "m"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	turns := int64(sessions * rounds)
	reloads = rc.ckptReads.Load() - reloads
	if kept := turns - reloads; kept < turns/8 {
		t.Fatalf("%d of %d turns found their projection kept (bound %d B, %d B a session)", kept, turns, bound, one)
	}
	h.engine.mu.Lock()
	used := h.engine.released.used
	h.engine.mu.Unlock()
	if used > bound {
		t.Fatalf("%d bytes kept, bound %d", used, bound)
	}
	t.Logf("%d of %d turns found their projection kept", turns-reloads, turns)
}

// countingSecrets counts the reads of model keys.
type countingSecrets struct {
	*MemSecrets
	gets atomic.Int64
}

func (c *countingSecrets) Get(ctx context.Context, session, name string) ([]byte, error) {
	c.gets.Add(1)
	return c.MemSecrets.Get(ctx, session, name)
}

// A session whose projection was kept when it was released takes its
// model client back with it: its turns read the sealed model key once,
// not once a turn. With no projection kept, every turn reads it.
func TestReleasedKeepsTheModelClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int64
		want  int64
	}{{"kept", 0, 1}, {"none kept", -1, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			sec := &countingSecrets{MemSecrets: NewMemSecrets()}
			h := newHarness(t, Config{Secrets: sec, ReleasedBytes: tc.bytes}, nil)
			id := h.create(api.CreateSessionRequest{})
			for range 4 {
				if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "hi"}); err != nil {
					t.Fatal(err)
				}
			}
			if got := sec.gets.Load(); got != tc.want {
				t.Fatalf("the model key was read %d times in 4 turns, want %d", got, tc.want)
			}
		})
	}
}

// The projection the engine folds as a turn runs (with the references of
// effects' ends taken as the engine built them, and the start of a
// synchronous send deferred to its first fence) is the projection a fold
// of the journal gives, field for field: text turns, a long reply that is
// held by reference, a turn whose model call fails, and a turn of four
// parallel tool calls.
func TestLiveFoldIsTheJournalFold(t *testing.T) {
	h, _ := countingHarness(t, Config{})
	ctx := context.Background()
	id := h.create(toolSession("echo"))
	inputs := []string{
		"hello",
		`{"reply":"` + strings.Repeat("long reply ", 40) + `"}`,
		`{"fail":{"code":"rate_limited","message":"slow down"}}`,
		script(map[string]any{"tool_calls": []map[string]any{
			{"name": "echo", "input": map[string]int{"n": 1}}, {"name": "echo", "input": map[string]int{"n": 2}},
			{"name": "echo", "input": map[string]int{"n": 3}}, {"name": "echo", "input": map[string]int{"n": 4}},
		}, "reply": "done"}),
		"after the tools",
	}
	for _, in := range inputs {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: in})
		if err != nil && !strings.Contains(in, `"fail"`) {
			t.Fatalf("Send(%q) = %v", in, err)
		}
	}
	if n := len(h.records(id)); n < 30 {
		t.Fatalf("only %d records after the turns", n)
	}
	kept, _ := liveAndFolded(t, h, id)
	if len(kept.Open) != 0 {
		t.Fatalf("effects left open after the turns: %v", kept.Open)
	}
}

// liveAndFolded takes session id's kept projection and folds its journal
// afresh, and fails unless the two are one: the same encoding, and the
// same transcript value for value.
func liveAndFolded(t *testing.T, h *harness, id string) (kept, folded *state) {
	t.Helper()
	h.engine.mu.Lock()
	kept, _ = h.engine.released.take(id)
	h.engine.mu.Unlock()
	if kept == nil {
		t.Fatal("no kept projection after the turns")
	}
	folded = newState()
	for _, r := range h.records(id) {
		if err := folded.apply(r); err != nil {
			t.Fatalf("fold of record %d (%s): %v", r.Sequence, r.Kind, err)
		}
	}
	a, err := kept.encode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := folded.encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("the live projection differs from the journal's fold:\nlive   %s\nfolded %s", a, b)
	}
	if !reflect.DeepEqual(kept.Transcript, folded.Transcript) {
		t.Fatalf("the live transcript differs from the journal's fold:\nlive   %#v\nfolded %#v", kept.Transcript, folded.Transcript)
	}
	return kept, folded
}
