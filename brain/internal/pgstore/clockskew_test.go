package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestAnswerKeptByNodeWithClockAhead: two nodes share one database, the
// second's wall clock hours ahead, past the retention. An answer recorded
// on the first node is still within its retention on the database's
// clock, so a retry on the second node replays it instead of running the
// request again (claiming the key afresh, or forgetting the answer), on
// every claim path; the first node still replays it afterwards.
func TestAnswerKeptByNodeWithClockAhead(t *testing.T) {
	const retention = time.Hour
	ctx := context.Background()
	body := `{"last_sequence":3}`
	for _, riding := range []bool{false, true} {
		name := "claim"
		if riding {
			name = "riding claim"
		}
		t.Run(name, func(t *testing.T) {
			url := pgtest.Database(t)
			a := openDB(t, url, nil).Requests(&idem.Options{Retention: retention})
			ahead := func() time.Time { return time.Now().Add(3 * time.Hour) }
			b := openDB(t, url, nil).Requests(&idem.Options{Retention: retention, Now: ahead})
			d := idem.Digest([]byte("send"))
			claim := func(r *pgstore.Requests, who string) {
				t.Helper()
				var c interface{ Release() error }
				var ans *idem.Answer
				var err error
				if riding {
					var rc idem.RidingClaim
					rc, ans, err = r.ClaimRiding(ctx, "send_message", "k", d, answerAs, nil)
					if rc != nil {
						c = rc
					}
				} else {
					var pc idem.Claimed
					pc, ans, err = r.Claim(ctx, "send_message", "k", d)
					if pc != nil {
						c = pc
					}
				}
				fresh := c != nil
				if fresh {
					c.Release()
				}
				if err != nil || fresh || ans == nil || ans.Status != 200 || string(ans.Body) != body {
					t.Fatalf("retry on the %s node = fresh claim %v, %+v, %v; want the answer replayed", who, fresh, ans, err)
				}
			}
			c, _, err := a.Claim(ctx, "send_message", "k", d)
			if err != nil || c == nil {
				t.Fatalf("Claim = %v, %v", c, err)
			}
			if err := c.Answer(200, []byte(body)); err != nil {
				t.Fatal(err)
			}
			claim(b, "skewed")
			if n := b.Len(); n != 1 {
				t.Errorf("Len on the skewed node = %d, want the answer counted", n)
			}
			claim(a, "first")
		})
	}
}
