package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/journal/journaltest"
	"github.com/brain-in-go/brain/brain/internal/pgstore"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

func TestJournalSuite(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Store {
		return openDB(t, pgtest.Database(t), nil).Journal()
	})
}

// TestAppendStamps checks the stamps of records whose own times mix zero
// (the commit's time), past and future values, in one-record and
// many-record appends, plain and fenced: each stamp is the largest of the
// session's previous stamp and of the times up to it, and what Append
// reports is what Read answers.
func TestAppendStamps(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		t.Run(fmt.Sprint("fenced=", fenced), func(t *testing.T) {
			db := openDB(t, pgtest.Database(t), func(o *pgstore.Options) { o.Fenced, o.LeaseDuration = fenced, time.Minute })
			ctx := context.Background()
			if fenced {
				if _, err := db.AcquireLease(ctx, "s"); err != nil {
					t.Fatal(err)
				}
			}
			j := db.Journal()
			future := time.Now().Add(time.Hour).UnixMilli()
			before := time.Now().UnixMilli()
			batches := [][]int64{
				{5, 0, 3},         // creates the session: 5, then now, now
				{0},               // now
				{1, future, 0, 2}, // last, future, future, future
				{7},               // future
				{future + 10, -4}, // future+10, future+10
				{0, 0},            // future+10, future+10
			}
			var got []journal.Record
			next := uint64(1)
			for _, times := range batches {
				recs := make([]journal.Record, len(times))
				for i, ms := range times {
					recs[i] = journal.Record{Kind: "k", RecordedAtMs: ms, Data: []byte(`{}`)}
				}
				if err := j.Append(ctx, "s", next, recs); err != nil {
					t.Fatal(err)
				}
				next += uint64(len(recs))
				got = append(got, recs...)
			}
			after := time.Now().UnixMilli()
			stamps := make([]int64, len(got))
			for i, r := range got {
				stamps[i] = r.RecordedAtMs
			}
			if stamps[0] != 5 || stamps[1] < before || stamps[1] > after+1000 || stamps[2] != stamps[1] {
				t.Fatalf("first append stamped %v, want 5, now, now", stamps[:3])
			}
			if stamps[3] < stamps[2] || stamps[3] > after+1000 || stamps[4] != stamps[3] {
				t.Fatalf("stamps %v: the one-record append and the next record must be the commit's time, not below the last", stamps[:5])
			}
			for i, want := range []int64{future, future, future, future, future + 10, future + 10, future + 10, future + 10} {
				if stamps[5+i] != want {
					t.Fatalf("stamps %v: record %d stamped %d, want %d", stamps, 6+i, stamps[5+i], want)
				}
			}
			read, err := j.Read(ctx, "s", 0, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(read) != len(got) {
				t.Fatalf("read %d records, want %d", len(read), len(got))
			}
			for i := range read {
				if read[i].Sequence != uint64(i+1) || read[i].RecordedAtMs != stamps[i] {
					t.Fatalf("record %d read as seq %d at %d, Append reported seq %d at %d", i+1, read[i].Sequence, read[i].RecordedAtMs, got[i].Sequence, stamps[i])
				}
			}
		})
	}
}
