package idem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// answerAll records every outcome without an error as a 200 with its value.
func answerAll(v any, err error) (int, []byte, bool) {
	if err != nil {
		return 0, nil, false
	}
	return 200, []byte(v.(string)), true
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A riding claim writes nothing of its own: until the journal reports its
// claim record durable, it holds the key in this process only, and a
// release (its commit failed, so nothing ran) leaves the key usable here
// and after a restart.
func TestRidingClaimWritesNothingUntilJournaled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("send"))
	var tally atomic.Int64
	c, a, err := s.ClaimRiding(commits.With(ctx, commits.New(&tally)), "send_message", "k", d, answerAll, nil)
	if err != nil || a != nil || c == nil || c.Ride() == nil {
		t.Fatalf("ClaimRiding = %v, %v, %v", c, a, err)
	}
	if c.Durable() {
		t.Fatal("a riding claim is durable before the journal carried it")
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("requests.log holds %d bytes after a riding claim, want 0", n)
	}
	// The same key waits for the claim in flight.
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, _, err := s.Claim(waitCtx, "send_message", "k", d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("claim of a key in flight = %v, want it to wait", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, path); n != 0 || tally.Load() != 0 {
		t.Fatalf("a release of a riding claim wrote %d bytes and counted %d flushes, want none", n, tally.Load())
	}
	s.Close()
	s = open(t, path, nil)
	if c, _, err := s.Claim(ctx, "send_message", "k", d); err != nil || c == nil {
		t.Fatalf("the released key after a restart = %v, want it usable", err)
	}
}

// The journal reports the claim and the answer records: the store folds
// them, holds their frames for requests.log, makes them durable in
// SyncJournaled, and the answer costs the request no flush of its own.
func TestRidingClaimAnsweredByTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("send"))
	var tally atomic.Int64
	durable := 0
	c, _, err := s.ClaimRiding(commits.With(ctx, commits.New(&tally)), "send_message", "k", d, answerAll, func() { durable++ })
	if err != nil {
		t.Fatal(err)
	}
	ride := c.Ride()
	if err := s.Journaled(commits.ClaimKind, ride.Claim); err != nil {
		t.Fatal(err)
	}
	if !c.Durable() || durable != 1 {
		t.Fatalf("after the claim record: durable %v, onDurable ran %d times", c.Durable(), durable)
	}
	if ride.Answer(nil, errors.New("refused")) != nil {
		t.Fatal("an outcome that is not an answer produced an answer record")
	}
	data := ride.Answer(`{"last_sequence":4}`, nil)
	if err := s.Journaled(commits.AnswerKind, data); err != nil {
		t.Fatal(err)
	}
	rec, ok := c.Recorded()
	if !ok || rec.Status != 200 || string(rec.Body) != `{"last_sequence":4}` {
		t.Fatalf("Recorded = %+v, %v", rec, ok)
	}
	if err := c.Answer(rec.Status, rec.Body); err != nil {
		t.Fatal(err)
	}
	if tally.Load() != 0 {
		t.Fatalf("the request waited on %d flushes of the requests log, want 0", tally.Load())
	}
	if err := s.SyncJournaled(); err != nil {
		t.Fatal(err)
	}
	// The same records reported twice (a replay) change nothing.
	size := fileSize(t, path)
	_ = s.Journaled(commits.ClaimKind, ride.Claim)
	_ = s.Journaled(commits.AnswerKind, data)
	if got := fileSize(t, path); got != size {
		t.Fatalf("records reported again grew the log from %d to %d bytes", size, got)
	}
	s.Close()
	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "send_message", "k", d); err != nil || a == nil || string(a.Body) != `{"last_sequence":4}` {
		t.Fatalf("replay after restart = %+v, %v", a, err)
	}
	if _, _, err := s.Claim(ctx, "send_message", "k", Digest([]byte("other"))); !errors.Is(err, ErrConflict) {
		t.Fatalf("different request under the key = %v, want ErrConflict", err)
	}
}

// A claim record durable in the journal without its answer (the process
// ended mid-turn) is ambiguous after a restart; one whose frame never
// reached requests.log (lost with the page cache) is brought back from
// the journal's replay by RecoverJournaled, once.
func TestRecoverJournaledClaims(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("send"))
	var recs []JournaledRecord
	for _, k := range []string{"answered", "unanswered"} {
		c, _, err := s.ClaimRiding(ctx, "send_message", k, d, answerAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, JournaledRecord{Kind: commits.ClaimKind, Data: c.Ride().Claim})
		if k == "answered" {
			recs = append(recs, JournaledRecord{Kind: commits.AnswerKind, Data: c.Ride().Answer(`"done"`, nil)})
		}
	}
	s.Close()
	// Nothing reached requests.log: only the journal holds the records.
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("requests.log holds %d bytes", n)
	}
	if err := RecoverJournaled(path, recs); err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, path)
	if err := RecoverJournaled(path, recs); err != nil || fileSize(t, path) != size {
		t.Fatalf("recovering the same records again = %v, log %d bytes, was %d", err, fileSize(t, path), size)
	}
	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "send_message", "answered", d); err != nil || a == nil || string(a.Body) != `"done"` {
		t.Fatalf("recovered answer = %+v, %v", a, err)
	}
	if _, _, err := s.Claim(ctx, "send_message", "unanswered", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("recovered claim without an answer = %v, want ErrAmbiguous", err)
	}
	if err := RecoverJournaled(path, []JournaledRecord{{Kind: commits.ClaimKind, Data: []byte(`{"v":1}`)}}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a malformed journal record = %v, want ErrDamaged", err)
	}
}

// Records reaching a closed store are reported by SyncJournaled, so that
// the journal keeps the log files holding them.
func TestJournaledAfterCloseIsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	c, _, err := s.ClaimRiding(context.Background(), "send_message", "k", Digest(), answerAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SyncJournaled(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.SyncJournaled(); err != nil {
		t.Fatalf("SyncJournaled after a clean Close = %v", err)
	}
	if err := s.Journaled(commits.ClaimKind, c.Ride().Claim); !errors.Is(err, ErrLost) {
		t.Fatalf("Journaled after Close = %v, want ErrLost", err)
	}
	if err := s.SyncJournaled(); !errors.Is(err, ErrLost) {
		t.Fatalf("SyncJournaled after a lost record = %v, want ErrLost", err)
	}
}

// A riding claim answered without the journal (its outcome was recorded
// by no commit) writes its claim and answer in one flush.
func TestRidingClaimAnsweredOutsideTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	var tally atomic.Int64
	c, _, err := s.ClaimRiding(commits.With(ctx, commits.New(&tally)), "send_message", "k", Digest(), answerAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(404, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if tally.Load() != 1 {
		t.Fatalf("flushes = %d, want 1", tally.Load())
	}
	s.Close()
	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "send_message", "k", Digest()); err != nil || a == nil || a.Status != 404 {
		t.Fatalf("replay = %+v, %v", a, err)
	}
}

// The frames of journaled records cost no write of their own: they are
// held and written together, ahead of the next frame written for another
// reason (so the file keeps their order), and at Close.
func TestJournaledFramesWrittenTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	ctx := context.Background()
	d := Digest([]byte("send"))
	keys := []string{"a", "b", "c"}
	rides := map[string]*commits.Ride{}
	for _, k := range keys {
		c, _, err := s.ClaimRiding(ctx, "send_message", k, d, answerAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		rides[k] = c.Ride()
		if err := s.Journaled(commits.ClaimKind, c.Ride().Claim); err != nil {
			t.Fatal(err)
		}
		if !c.Durable() {
			t.Fatalf("claim %s is not durable once journaled", k)
		}
	}
	if n := fileSize(t, path); n != 0 {
		t.Fatalf("journaled claims wrote %d bytes of their own", n)
	}
	// A claim and answer outside the journal write the held frames first.
	c, _, err := s.Claim(ctx, "send_message", "plain", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Answer(200, []byte(`"plain"`)); err != nil {
		t.Fatal(err)
	}
	after := open(t, crashCopy(t, path, fileSize(t, path)), nil)
	for _, k := range keys {
		if _, _, err := after.Claim(ctx, "send_message", k, d); !errors.Is(err, ErrAmbiguous) {
			t.Fatalf("journaled claim %s after the next write and a crash = %v, want it held (ErrAmbiguous)", k, err)
		}
	}
	if _, a, err := after.Claim(ctx, "send_message", "plain", d); err != nil || a == nil || string(a.Body) != `"plain"` {
		t.Fatalf("plain answer after a crash = %+v, %v", a, err)
	}
	// Answers held at Close reach the file.
	size := fileSize(t, path)
	for _, k := range keys {
		if err := s.Journaled(commits.AnswerKind, rides[k].Answer(`"`+k+`"`, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if n := fileSize(t, path); n != size {
		t.Fatalf("journaled answers wrote %d bytes of their own", n-size)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path, nil)
	for _, k := range keys {
		if _, a, err := s.Claim(ctx, "send_message", k, d); err != nil || a == nil || string(a.Body) != `"`+k+`"` {
			t.Fatalf("answer %s after Close and reopen = %+v, %v", k, a, err)
		}
	}
}
