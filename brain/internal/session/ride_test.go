package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/fullfs"
	"github.com/brain-in-go/brain/brain/internal/journal"
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
	fs, err := journal.OpenFileStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: fs}
	h := &harness{t: t, store: store, envs: newFakeEnvs(nil), secret: NewMemSecrets()}
	if h.engine, err = New(Config{Store: store, Secrets: h.secret}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	id := h.create(api.CreateSessionRequest{})
	before := store.appends.Load()
	var tally commits.Counter
	ctx := commits.WithRide(commits.With(context.Background(), &tally), testRide())
	sum, err := h.engine.Send(ctx, id, api.UserInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if n := store.appends.Load() - before; n != 2 || tally.Load() != 2 {
		t.Errorf("a riding text turn made %d appends (%d counted), want 2", n, tally.Load())
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
