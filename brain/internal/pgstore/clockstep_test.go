package pgstore_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// steppedClock answers start plus an offset that the test moves: a wall
// clock that an operator or NTP steps.
type steppedClock struct {
	start  time.Time
	offset atomic.Int64
}

func (c *steppedClock) now() time.Time {
	return c.start.Add(time.Duration(c.offset.Load()))
}

func (c *steppedClock) set(d time.Duration) { c.offset.Store(int64(d)) }

// TestAnswerAfterClockStepBackIsKept: the wall clock steps back an hour
// between a claim and its answer, then forward again (NTP corrects it, or
// the retry reaches a node whose clock was right). The answer is kept for
// the retention counted from no earlier than its claim: a retry a few
// seconds after the claim replays it, on every path that records an
// answer, and the journal's answer record is never stamped before its
// claim record (as in the file store).
func TestAnswerAfterClockStepBackIsKept(t *testing.T) {
	const step = time.Hour
	retention := time.Minute
	ctx := context.Background()
	body := `{"last_sequence":7}`
	open := func(t *testing.T) (*pgstore.DB, *pgstore.Requests, *steppedClock) {
		url := pgtest.Database(t)
		db := fencedNode(t, url, "a", "s")
		clock := &steppedClock{start: time.Now().Truncate(time.Millisecond)}
		return db, db.Requests(&idem.Options{Retention: retention, Now: clock.now}), clock
	}
	// retry moves the clock a few seconds past the claim and asks again.
	retry := func(t *testing.T, r *pgstore.Requests, clock *steppedClock, d [32]byte, riding bool) {
		t.Helper()
		clock.set(3 * time.Second)
		var ans *idem.Answer
		var err error
		if riding {
			_, ans, err = r.ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
		} else {
			_, ans, err = r.Claim(ctx, "send_message", "k", d)
		}
		if err != nil || ans == nil || ans.Status != 200 || string(ans.Body) != body {
			t.Fatalf("retry 3s after the claim = %+v, %v; want the answer replayed", ans, err)
		}
	}
	atMs := func(t *testing.T, data json.RawMessage) int64 {
		t.Helper()
		var v struct {
			AtMs int64 `json:"at_ms"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		return v.AtMs
	}

	t.Run("committed claim", func(t *testing.T) {
		_, r, clock := open(t)
		d := idem.Digest([]byte("create"))
		c, _, err := r.Claim(ctx, "send_message", "k", d)
		if err != nil || c == nil {
			t.Fatalf("Claim = %v, %v", c, err)
		}
		clock.set(-step)
		if err := c.Answer(200, []byte(body)); err != nil {
			t.Fatal(err)
		}
		retry(t, r, clock, d, false)
	})

	t.Run("riding claim answered without an append", func(t *testing.T) {
		_, r, clock := open(t)
		d := idem.Digest([]byte("send"))
		c, _, err := r.ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
		if err != nil || c == nil {
			t.Fatalf("ClaimRiding = %v, %v", c, err)
		}
		clock.set(-step)
		if err := c.Answer(200, []byte(body)); err != nil {
			t.Fatal(err)
		}
		retry(t, r, clock, d, true)
	})

	for _, together := range []bool{false, true} {
		name := "riding answer in a later append"
		if together {
			name = "riding claim and answer in one append"
		}
		t.Run(name, func(t *testing.T) {
			db, r, clock := open(t)
			d := idem.Digest([]byte("send"))
			c, _, err := r.ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
			if err != nil || c == nil {
				t.Fatalf("ClaimRiding = %v, %v", c, err)
			}
			claim := c.Ride().Claim
			recs := []journal.Record{rec("turn_started", 2), {Kind: commits.ClaimKind, Data: claim}}
			next := uint64(2)
			if !together {
				if err := db.Journal().Append(ctx, "s", next, recs); err != nil {
					t.Fatal(err)
				}
				next += uint64(len(recs))
				recs = nil
			}
			clock.set(-step)
			answer := c.Ride().Answer(body, nil)
			if got, want := atMs(t, answer), atMs(t, claim); got < want {
				t.Errorf("answer record at_ms %d is before its claim's %d", got, want)
			}
			recs = append(recs, journal.Record{Kind: commits.AnswerKind, Data: answer}, rec("turn_ended", int(next)+len(recs)+1))
			if err := db.Journal().Append(ctx, "s", next, recs); err != nil {
				t.Fatal(err)
			}
			if a, ok := c.Recorded(); !ok || string(a.Body) != body {
				t.Fatalf("Recorded = %+v, %v", a, ok)
			}
			if err := c.Answer(200, []byte(body)); err != nil {
				t.Fatal(err)
			}
			retry(t, r, clock, d, true)
		})
	}
}
