package idem

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// steppingClock answers start until stepped, then start minus back: a
// wall clock an operator or NTP set back.
type steppingClock struct {
	start   time.Time
	back    time.Duration
	stepped atomic.Bool
}

func (c *steppingClock) now() time.Time {
	if c.stepped.Load() {
		return c.start.Add(-c.back)
	}
	return c.start
}

// The wall clock steps back between a riding claim and the commit that
// carries its answer (an async submission's claim and answer ride the
// same commit). The journal's answer record is the claim's answer all the
// same: the process answers from it, and when the process dies before
// requests.log holds it, the journal's replay brings the answer back, so
// a retry with the key gets it replayed instead of an ambiguous refusal.
func TestAnswerAfterClockStepBackIsKept(t *testing.T) {
	for _, step := range []time.Duration{time.Millisecond, 5 * time.Second, time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "requests.log")
			clock := &steppingClock{start: time.UnixMilli(1_700_000_000_000), back: step}
			s := open(t, path, &Options{Now: clock.now})
			ctx := commits.With(context.Background(), commits.New(new(atomic.Int64)))
			d := Digest([]byte("send"))
			c, _, err := s.ClaimRiding(ctx, "send_message.async", "k", d, answerAll, nil)
			if err != nil || c == nil {
				t.Fatalf("ClaimRiding = %v, %v", c, err)
			}
			clock.stepped.Store(true)
			ride := c.Ride()
			answer := ride.Answer(`{"seq":3}`, nil)
			recs := []JournaledRecord{{commits.ClaimKind, ride.Claim}, {commits.AnswerKind, answer}}
			for _, r := range recs {
				if err := s.Journaled(r.Kind, r.Data); err != nil {
					t.Fatal(err)
				}
			}
			if a, ok := c.Recorded(); !ok || string(a.Body) != `{"seq":3}` {
				t.Fatalf("Recorded = %+v, %v; want the journal's answer", a, ok)
			}
			// The process dies: the held frames never reach requests.log.
			s.f.Close()

			if err := RecoverJournaled(path, recs); err != nil {
				t.Fatal(err)
			}
			s = open(t, path, &Options{Now: clock.now})
			defer s.Close()
			if _, a, err := s.Claim(context.Background(), "send_message.async", "k", d); err != nil || a == nil || a.Status != 200 || string(a.Body) != `{"seq":3}` {
				t.Fatalf("retry after the restart = %+v, %v; want the answer replayed", a, err)
			}
		})
	}
}
