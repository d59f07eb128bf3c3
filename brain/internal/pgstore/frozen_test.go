package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRequestsWhileDatabaseHangs freezes PostgreSQL (SIGSTOP of all its
// processes: connections stay open, nothing answers) while claims,
// appends and a readiness ping run at once. Every one of them returns
// within a few operation timeouts with an error answered 503 overloaded
// (retryable), including claims that queued behind a hung group commit.
// Once PostgreSQL resumes, every key claims again at once: none of the
// claims that failed ran, so none is ambiguous or awaited.
func TestRequestsWhileDatabaseHangs(t *testing.T) {
	url := pgtest.Database(t)
	srv := pgtest.Control(t)
	const op = time.Second
	db := openDB(t, url, func(o *pgstore.Options) { o.OpTimeout = op; o.LeaseDuration = time.Minute })
	r, j := db.Requests(nil), db.Journal()
	ctx := context.Background()
	// More claims than two group commits carry, so that some wait in
	// the queue behind hung batches.
	const sessions, keys = 6, 300
	for i := range sessions {
		if err := j.Append(ctx, fmt.Sprint("s", i), 1, []journal.Record{rec("k", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := srv.Thaw(); err != nil {
				t.Error(err)
			}
		}
	}
	defer thaw()
	bound := 8 * op // a few operation timeouts, with room for a loaded machine
	var wg sync.WaitGroup
	check := func(what string, f func(ctx context.Context) error) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			start := time.Now()
			err := f(ctx)
			took := time.Since(start)
			switch {
			case took > bound:
				t.Errorf("%s with the database frozen took %v (bound %v): %v", what, took, bound, err)
			case !errors.Is(err, journal.ErrOverloaded):
				t.Errorf("%s with the database frozen = %v, want an error answered 503 overloaded", what, err)
			}
		})
	}
	for i := range keys {
		check(fmt.Sprint("claim ", i), func(ctx context.Context) error {
			k := fmt.Sprint("k", i)
			_, _, err := r.Claim(ctx, "s", k, idem.Digest([]byte(k)))
			return err
		})
	}
	for i := range sessions {
		check(fmt.Sprint("append ", i), func(ctx context.Context) error {
			return j.Append(ctx, fmt.Sprint("s", i), 2, []journal.Record{rec("k", 2)})
		})
	}
	check("ping", db.Ping)
	wg.Wait()
	thaw()
	for i := range keys {
		c, _, err := claimRetrying(r, fmt.Sprint("k", i), 20*time.Second)
		if err != nil {
			t.Fatalf("claim k%d after the database resumed = %v, want a claim", i, err)
		}
		c.Answer(200, nil)
	}
}
