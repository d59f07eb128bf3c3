package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// testRide is a Ride whose answer records the summary it is given.
func testRide() *commits.Ride {
	return &commits.Ride{Claim: json.RawMessage(`{"claim":1}`), Answer: func(v any, err error) json.RawMessage {
		if err != nil {
			return nil
		}
		b, _ := json.Marshal(v)
		return b
	}}
}

// A synchronous send carrying a Ride costs two appends: its claim record
// rides turn_started, activation_started and model_call_started; its
// answer, the session's summary after the turn, rides the turn's end,
// which stays the last record.
func TestRideTextTurnAppends(t *testing.T) {
	store := &countingStore{}
	h := wrappedHarness(t, Config{}, nil, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	id := h.create(api.CreateSessionRequest{})
	before := store.appends.Load()
	var tally commits.Counter
	ctx := commits.WithRide(commits.With(context.Background(), &tally), testRide())
	sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	// The request waits on two commits. The store sees a third append
	// only when the coalescing timer flushed the deferred start before
	// model_call_started came (a loaded machine: more than CoalesceWindow
	// between them), a flush the turn does not wait on.
	if n := store.appends.Load() - before; n < 2 || n > 3 || tally.Load() != 2 {
		t.Errorf("a riding text turn made %d appends (%d counted), want 2 counted (and 2 appends, 3 with a timer flush)", n, tally.Load())
	}
	recs := h.records(id)
	want := []string{api.KindTurnStarted, api.KindActivationStarted, commits.ClaimKind, api.KindModelCallStarted,
		api.KindModelCallEnded, api.KindTranscriptDelta, commits.AnswerKind, api.KindActivationEnded, api.KindTurnEnded}
	got := kinds(recs[len(recs)-len(want):])
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("records %v, want %v", got, want)
	}
	last := recs[len(recs)-1]
	if sum.LastSequence != last.Sequence {
		t.Fatalf("summary last sequence %d, last record %d", sum.LastSequence, last.Sequence)
	}
	answered := decode[api.SessionSummary](t, recs[len(recs)-3].Data)
	if answered != sum {
		t.Fatalf("recorded answer %+v, Send answered %+v", answered, sum)
	}
	// The private records are not events.
	page, err := h.engine.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page.Events {
		if strings.HasPrefix(ev.EventType, "_") {
			t.Fatalf("event %s served", ev.EventType)
		}
	}
	if n := len(page.Events); page.Events[n-1].Sequence != sum.LastSequence {
		t.Fatalf("last event %d, summary %d", page.Events[n-1].Sequence, sum.LastSequence)
	}
}

// A riding send whose first commit fails (a full disk) leaves nothing
// durable: neither its turn nor its claim record reaches the journal, so
// the caller may release the key.
func TestRideStartOnFullDiskLeavesNothing(t *testing.T) {
	mnt := fullfs.Mount(t, 64<<20)
	h := openHarness(t, filepath.Join(mnt, "sessions"), Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	filler := fullfs.Fill(t, mnt)
	big := strings.Repeat("m", 1<<20)
	_, err := h.engine.Send(commits.WithRide(ctx, testRide()), id, api.UserInput{Message: big})
	if !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send on a full disk = %v, want journal.ErrWrite", err)
	}
	filler.Free(t)
	if sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send after space came back = %+v, %v", sum, err)
	}
	for _, r := range h.records(id) {
		if r.Kind == commits.ClaimKind || (r.Kind == api.KindTurnStarted && strings.Contains(string(r.Data), big[:64])) {
			t.Fatalf("the refused send left %s durable", r.Kind)
		}
	}
}

// batchStore records the kinds of each append.
type batchStore struct {
	journal.Store
	mu      sync.Mutex
	batches [][]string
}

func (b *batchStore) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	err := b.Store.Append(ctx, session, expectedNext, records)
	if err == nil {
		b.mu.Lock()
		b.batches = append(b.batches, kinds(records))
		b.mu.Unlock()
	}
	return err
}

func (b *batchStore) since(n int) [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]string(nil), b.batches[n:]...)
}

// An async submission carrying a Ride costs one append before Submit
// answers: turn_started, activation_started, the claim record and the
// answer record, which is the turn_started sequence Submit answers. The
// turn's own commits carry no answer.
func TestRideSubmitCommitsClaimAndAnswerWithTheStart(t *testing.T) {
	store := &batchStore{}
	h := wrappedHarness(t, Config{}, nil, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	id := h.create(api.CreateSessionRequest{})
	before := len(store.since(0))
	var tally commits.Counter
	ctx := commits.WithRide(commits.With(context.Background(), &tally), testRide())
	seq, err := h.engine.Submit(ctx, id, api.UserInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if tally.Load() != 1 {
		t.Errorf("Submit waited on %d commits, want 1", tally.Load())
	}
	h.waitEvent(id, seq, api.KindTurnEnded)
	batches := store.since(before)
	want := []string{api.KindTurnStarted, api.KindActivationStarted, commits.ClaimKind, commits.AnswerKind}
	if len(batches) == 0 || strings.Join(batches[0], " ") != strings.Join(want, " ") {
		t.Fatalf("first append %v, want %v", batches, want)
	}
	recs := h.records(id)
	var start []journal.Record
	for i, r := range recs {
		if r.Kind == api.KindTurnStarted && r.Sequence == seq {
			start = recs[i : i+4]
		}
	}
	if start == nil {
		t.Fatalf("no turn_started at %d in %v", seq, kinds(recs))
	}
	if got := decode[uint64](t, start[3].Data); got != seq {
		t.Fatalf("recorded answer %d, Submit answered %d", got, seq)
	}
	if n := len(ofKind(recs, commits.AnswerKind)); n != 1 {
		t.Fatalf("%d answer records, want 1 (the turn's end carries none)", n)
	}
	if n := len(ofKind(recs, commits.ClaimKind)); n != 1 {
		t.Fatalf("%d claim records, want 1", n)
	}
}

// An async submission whose only commit fails (a full disk) leaves
// nothing durable, neither its turn nor its claim nor its answer, and is
// refused as unavailable, so the caller may release the key.
func TestRideSubmitOnFullDiskLeavesNothing(t *testing.T) {
	mnt := fullfs.Mount(t, 64<<20)
	h := openHarness(t, filepath.Join(mnt, "sessions"), Config{}, nil)
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	filler := fullfs.Fill(t, mnt)
	big := strings.Repeat("m", 1<<20)
	_, err := h.engine.Submit(commits.WithRide(ctx, testRide()), id, api.UserInput{Message: big})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Submit on a full disk = %v, want ErrUnavailable wrapping journal.ErrWrite", err)
	}
	filler.Free(t)
	if sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send after space came back = %+v, %v", sum, err)
	}
	for _, r := range h.records(id) {
		if r.Kind == commits.ClaimKind || r.Kind == commits.AnswerKind ||
			(r.Kind == api.KindTurnStarted && strings.Contains(string(r.Data), big[:64])) {
			t.Fatalf("the refused submission left %s durable", r.Kind)
		}
	}
}

// A turn stopped while its tool call is in flight and its writes failing
// cannot commit the cancel's start: no cancel is sent, and the turn still
// ends (its caller is answered with the write failure) instead of waiting
// for a cancel that never went out. Once writes succeed again the session
// runs turns again.
func TestStoppedToolOnFailingWritesSettles(t *testing.T) {
	h, store := failingToolHarness(t, "hang")
	id := h.create(toolSession("hang"))
	errc := h.toolTurnThenFailWrites(store, id)
	select {
	case err := <-errc:
		if !errors.Is(err, journal.ErrWrite) {
			t.Fatalf("turn stopped while writes fail = %v, want journal.ErrWrite", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the turn never ended: its stopped tool call waited on a cancel that was never sent")
	}
	if n := len(h.envs.opsOf(envapi.RequestCancel)); n != 0 {
		t.Fatalf("%d cancels sent though their start was not durable", n)
	}
	store.failing.Store(false)
	// The stopped tool's execute returns once its request is abandoned;
	// until then the session is busy with it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sum, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "after"})
		if errors.Is(err, ErrBusy) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil || sum.Status != api.StatusIdle {
			t.Fatalf("Send after writes came back = %+v, %v", sum, err)
		}
		break
	}
}

// A session kept in memory between turns (idle_ttl_ms 0) whose turn ended
// with a write failure while its stopped tool was still executing is
// dropped from memory once the tool is done, not kept with a turn the
// journal never closed: when writes succeed again it is reloaded and runs
// the next turn.
func TestFaultedSessionLeavesMemoryAfterItsTools(t *testing.T) {
	h, store := failingToolHarness(t, "slowstop")
	keep := int64(0)
	req := toolSession("slowstop")
	req.IdleTTLMs = &keep
	id := h.create(req)
	errc := h.toolTurnThenFailWrites(store, id)
	if err := <-errc; !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("turn stopped while writes fail = %v, want journal.ErrWrite", err)
	}
	time.Sleep(600 * time.Millisecond) // the execute has returned
	store.failing.Store(false)
	if sum, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "after"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send after writes came back = %+v, %v", sum, err)
	}
}

// failingToolHarness is a harness over a file store whose writes can be
// made to fail, its environment "box" behaving as behaviour, with a turn
// bound of a second.
func failingToolHarness(t *testing.T, behaviour string) (*harness, *refusingStore) {
	t.Helper()
	return refusingHarness(t, Config{Limits: Limits{MaxTurn: time.Second, MaxTool: time.Minute}}, map[string]string{"box": behaviour})
}

// toolTurnThenFailWrites sends a turn that calls a tool and, once the
// tool's execute is sent, makes writes fail; it answers the turn's error.
func (h *harness) toolTurnThenFailWrites(store *refusingStore, id string) <-chan error {
	h.t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(context.Background(), id, api.UserInput{Message: script(map[string]any{"tool_calls": []map[string]any{{"name": "echo"}}})})
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.envs.opsOf(envapi.RequestExecute)) == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("the execute was never sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	store.failing.Store(true)
	return errc
}

// refuseClaimStore refuses, as a disk that is full for a moment, the
// first append that carries a riding claim, and takes every other.
type refuseClaimStore struct {
	journal.Store
	refused atomic.Int32
}

func (r *refuseClaimStore) Append(ctx context.Context, session string, expectedNext uint64, records []journal.Record) error {
	if len(ofKind(records, commits.ClaimKind)) > 0 && r.refused.Add(1) == 1 {
		return fmt.Errorf("%w: no space left on device", journal.ErrWrite)
	}
	return r.Store.Append(ctx, session, expectedNext, records)
}

// A riding send whose first commit the store refused is undone even when
// the store takes the turn's end a moment later (the disk had room
// again): nothing of the turn, no claim and no answer become durable, and
// the caller is told nothing was done (ErrUnavailable), so that a fault
// that passed is never kept as the answer of its key.
func TestRideStartRefusedThenRoomAgainLeavesNothing(t *testing.T) {
	store := &refuseClaimStore{}
	h := wrappedHarness(t, Config{}, nil, func(fs journal.Store) journal.Store { store.Store = fs; return store })
	id := h.create(api.CreateSessionRequest{})
	ctx := context.Background()
	_, err := h.engine.Send(commits.WithRide(ctx, testRide()), id, api.UserInput{Message: "refused"})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("Send whose first commit was refused = %v, want ErrUnavailable wrapping journal.ErrWrite", err)
	}
	for _, r := range h.records(id) {
		if r.Kind == commits.ClaimKind || r.Kind == commits.AnswerKind || r.Kind == api.KindTurnStarted || r.Kind == api.KindTurnFailed {
			t.Fatalf("the refused send left %s durable", r.Kind)
		}
	}
	if sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "after"}); err != nil || sum.Status != api.StatusIdle {
		t.Fatalf("Send after the store took appends again = %+v, %v", sum, err)
	}
}
