package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// appendRounds runs rounds of concurrent one-record appends, one per
// session and round, all released at once so that they commit together,
// and answers each session's errors by round.
func appendRounds(t *testing.T, j *pgstore.Journal, sessions []string, rounds int, next func(s string) uint64) map[string][]error {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	errs := map[string][]error{}
	for range rounds {
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() {
				<-start
				err := j.Append(ctx, s, next(s), []journal.Record{{Kind: "k", Data: []byte(`{}`)}})
				mu.Lock()
				errs[s] = append(errs[s], err)
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
	}
	return errs
}

// TestGroupCommitFencesEachSession appends concurrently to 32 sessions
// under this node's leases after another life of the node (the first
// one's membership having run out) took one of them over: the appends to that session fail with ErrNotOwner, every
// other append commits.
func TestGroupCommitFencesEachSession(t *testing.T) {
	url := pgtest.Database(t)
	a := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.NodeID, o.LeaseDuration = true, "n1", time.Minute })
	ctx := context.Background()
	var sessions []string
	for i := range 32 {
		s := fmt.Sprint("s", i)
		sessions = append(sessions, s)
		if _, err := a.AcquireLease(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	j := a.Journal()
	nexts := map[string]uint64{}
	var mu sync.Mutex
	next := func(s string) uint64 {
		mu.Lock()
		defer mu.Unlock()
		nexts[s]++
		return nexts[s]
	}
	for s, errs := range appendRounds(t, j, sessions, 3, next) {
		for _, err := range errs {
			if err != nil {
				t.Fatalf("append to %s before the takeover = %v", s, err)
			}
		}
	}
	// The node restarted under the same id, once the first life's
	// membership ran out (its heartbeats no longer reach the database),
	// takes s7 with a new epoch.
	sqlExec(t, url, `UPDATE brain_nodes SET expires_at = now() WHERE node_id = 'n1'`)
	b := openDB(t, url, func(o *pgstore.Options) { o.Fenced, o.NodeID, o.LeaseDuration = true, "n1", time.Minute })
	if _, err := b.AcquireLease(ctx, "s7"); err != nil {
		t.Fatal(err)
	}
	for s, errs := range appendRounds(t, j, sessions, 10, next) {
		for _, err := range errs {
			if s == "s7" && !errors.Is(err, pgstore.ErrNotOwner) {
				t.Fatalf("append to the session taken over = %v, want ErrNotOwner", err)
			}
			if s != "s7" && err != nil {
				t.Fatalf("append to %s alongside the fenced-out session = %v", s, err)
			}
		}
	}
	for _, s := range sessions {
		want := uint64(14)
		if s == "s7" {
			want = 4
		}
		if got, err := b.Journal().Next(ctx, s); err != nil || got != want {
			t.Fatalf("next of %s = %d, %v; want %d", s, got, err, want)
		}
	}
}

// TestGroupCommitIsolatesAFailingStatement plants a stray record in one
// session's table rows, so that its next append fails on the database
// (duplicate key) while 31 other sessions append at the same moment: the
// failing append answers an error and commits nothing, the others commit.
func TestGroupCommitIsolatesAFailingStatement(t *testing.T) {
	url := pgtest.Database(t)
	db := openDB(t, url, nil)
	ctx := context.Background()
	j := db.Journal()
	var sessions []string
	for i := range 32 {
		sessions = append(sessions, fmt.Sprint("s", i))
	}
	nexts := map[string]uint64{}
	var mu sync.Mutex
	next := func(s string) uint64 {
		mu.Lock()
		defer mu.Unlock()
		nexts[s]++
		return nexts[s]
	}
	appendRounds(t, j, sessions, 1, next)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO brain_records (session_id, sequence, kind, recorded_at_ms, frame_bytes)
		VALUES ('s5', 3, 'stray', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	var failed int
	for s, errs := range appendRounds(t, j, sessions, 4, next) {
		for i, err := range errs {
			switch {
			case s == "s5" && i >= 1 && err == nil:
				t.Fatalf("append %d to s5 over the stray row succeeded", i+2)
			case s == "s5" && i >= 1:
				failed++
			case err != nil:
				t.Fatalf("append %d to %s = %v", i+2, s, err)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no append to s5 failed")
	}
	for _, s := range sessions {
		want := uint64(6)
		if s == "s5" {
			want = 3 // the second append committed; none after it
		}
		if got, err := j.Next(ctx, s); err != nil || got != want {
			t.Fatalf("next of %s = %d, %v; want %d", s, got, err, want)
		}
	}
}
