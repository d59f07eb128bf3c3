package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestSubscriptionEndsWithoutDeleteWakeUp: a session deleted by another
// node whose wake-up never reached this one (its listener was
// reconnecting; here: the rows deleted directly, with no notification)
// still ends this node's subscriptions with ErrNotFound, by polling, as
// a commit without a wake-up still reaches them.
func TestSubscriptionEndsWithoutDeleteWakeUp(t *testing.T) {
	url := pgtest.Database(t)
	a := openDB(t, url, nil)
	ctx := context.Background()
	if err := a.Journal().Append(ctx, "s", 1, []journal.Record{rec("k", 1)}); err != nil {
		t.Fatal(err)
	}
	sub, err := a.Journal().Subscribe(ctx, "s", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sqlExec(t, url, `DELETE FROM brain_sessions WHERE session_id = 's'`)
	sqlExec(t, url, `DELETE FROM brain_records WHERE session_id = 's'`)
	nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if r, err := sub.Next(nctx); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Next after the session was deleted elsewhere = %+v, %v; want ErrNotFound", r, err)
	}
}
