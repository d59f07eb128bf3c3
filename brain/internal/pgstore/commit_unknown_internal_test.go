package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// openPlain opens an unfenced node on url, closed when t ends.
func openPlain(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{URL: url, SealingKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lostAnswers are the error responses by which a connection pooler
// replaces the answer of a server that committed: its connection to the
// server broke (08P01, as PgBouncer answers it), or it cannot tell how
// the statement ended (40003 statement_completion_unknown).
var lostAnswers = []struct{ severity, code, message string }{
	{"FATAL", "08P01", "server conn crashed?"},
	{"ERROR", "40003", "statement completion unknown"},
}

// TestAppendAnsweredLostByPooler: an append that the server committed but
// whose answer a connection pooler replaced by an error that does not say
// the transaction was rolled back is reported with ErrOutcomeUnknown,
// never as ErrUnavailable ("nothing committed"), and the node appends
// again right after.
func TestAppendAnsweredLostByPooler(t *testing.T) {
	for _, tc := range lostAnswers {
		t.Run(tc.code, func(t *testing.T) {
			url := pgtest.Database(t)
			proxy, purl := newPoolerProxy(t, url)
			j := openPlain(t, purl).Journal()
			ctx := context.Background()
			if err := j.Append(ctx, "s", 1, oneRecord()); err != nil {
				t.Fatal(err)
			}
			proxy.loseAnswerTo("answer-lost", tc.severity, tc.code, tc.message)
			err := j.Append(ctx, "s", 2, []journal.Record{{Kind: "k", Data: []byte(`{"m":"answer-lost"}`)}})
			if proxy.caught.Load() != 1 {
				t.Fatalf("the pooler never dropped the append's answer (append = %v)", err)
			}
			if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, journal.ErrOutcomeUnknown) {
				t.Fatalf("append whose answer the pooler lost = %v, want ErrOutcomeUnknown", err)
			}
			recs, err := openPlain(t, url).Journal().Read(ctx, "s", 0, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 || string(recs[1].Data) != `{"m":"answer-lost"}` {
				t.Fatalf("journal = %d records, want the committed append's record second", len(recs))
			}
			if err := j.Append(ctx, "s", 3, oneRecord()); err != nil {
				t.Fatalf("append after the pooler's error = %v, want it committed", err)
			}
		})
	}
}

// TestGroupCommitAnsweredLostByPooler: a group commit that the server
// committed but whose answer a connection pooler replaced by an error
// that leaves the commit's outcome unknown is not run again statement by
// statement (which would find its own appends committed and report them
// as conflicts): every append of the batch is ErrOutcomeUnknown, and
// every one is in the journal.
func TestGroupCommitAnsweredLostByPooler(t *testing.T) {
	for _, tc := range lostAnswers {
		t.Run(tc.code, func(t *testing.T) {
			url := pgtest.Database(t)
			proxy, purl := newPoolerProxy(t, url)
			db := openPlain(t, purl)
			ctx := context.Background()
			const sessions = 4
			for i := range sessions {
				if err := db.Journal().Append(ctx, fmt.Sprint("s", i), 1, oneRecord()); err != nil {
					t.Fatal(err)
				}
			}
			// The group commit is busy: the appends queue and go in one
			// batch, led from here.
			g := &db.group.batches
			for busy := false; !busy; time.Sleep(5 * time.Millisecond) {
				g.mu.Lock()
				if g.running == 0 { // the leaders of the appends above are gone
					g.running, busy = g.inFlight, true
				}
				g.mu.Unlock()
			}
			proxy.loseAnswerTo("answer-lost", tc.severity, tc.code, tc.message)
			errs := make([]error, sessions)
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() {
					data := []byte(fmt.Sprintf(`{"m":"answer-lost","i":%d}`, i))
					errs[i] = db.Journal().Append(ctx, fmt.Sprint("s", i), 2, []journal.Record{{Kind: "k", Data: data}})
				})
			}
			for end, queued := time.Now().Add(10*time.Second), 0; queued < sessions; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%d appends queued, want %d", queued, sessions)
				}
				g.mu.Lock()
				queued = len(g.pending)
				g.mu.Unlock()
			}
			g.mu.Lock()
			g.running = 1
			g.mu.Unlock()
			g.lead(nil, false)
			g.mu.Lock()
			g.running = 0
			g.mu.Unlock()
			wg.Wait()
			if proxy.caught.Load() != 1 {
				t.Fatalf("the pooler never dropped the batch's answer (appends = %v)", errs)
			}
			check := openPlain(t, url).Journal()
			for i, err := range errs {
				if !errors.Is(err, ErrOutcomeUnknown) {
					t.Errorf("append to s%d in the batch whose answer the pooler lost = %v, want ErrOutcomeUnknown", i, err)
				}
				if next, err := check.Next(ctx, fmt.Sprint("s", i)); err != nil || next != 3 {
					t.Errorf("Next of s%d = %d, %v; want 3 (the batch committed)", i, next, err)
				}
			}
			for i := range sessions {
				if err := db.Journal().Append(ctx, fmt.Sprint("s", i), 3, oneRecord()); err != nil {
					t.Errorf("append to s%d after the pooler's error = %v, want it committed", i, err)
				}
			}
		})
	}
}
