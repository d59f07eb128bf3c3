package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestPageBoundCountsStoredBytes: a page read's byte bound measures the
// records' stored bytes, not the frame_bytes column beside them. Rows
// whose frame_bytes was damaged to say almost nothing still give pages
// that hold what the bound allows, as the undamaged rows did, and the
// reads that follow them come to every record once.
func TestPageBoundCountsStoredBytes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	j := openDB(t, url, nil).Journal()
	recs := make([]journal.Record, 12)
	for i := range recs {
		recs[i] = journal.Record{Kind: "k", Data: []byte(`"` + strings.Repeat("x", 4000+i) + `"`)}
	}
	if err := j.Append(ctx, "s", 1, recs); err != nil {
		t.Fatal(err)
	}
	const maxBytes = 10000
	// The records a page after 0 holds: those whose frames fit the bound.
	want, total := 0, 0
	for i := range recs {
		total += journal.FrameSize(&recs[i])
		if total > maxBytes {
			break
		}
		want++
	}
	if want == 0 || want == len(recs) {
		t.Fatalf("the records make no test of the bound (%d of %d in a page)", want, len(recs))
	}
	sqlExec(t, url, `UPDATE brain_records SET frame_bytes = 1 WHERE session_id = $1`, []byte("s"))
	var after uint64
	for after < uint64(len(recs)) {
		page, err := j.Read(ctx, "s", after, 0, maxBytes)
		if err != nil {
			t.Fatalf("Read after %d = %v", after, err)
		}
		if len(page) == 0 {
			t.Fatalf("Read after %d answered nothing before the head", after)
		}
		size := 0
		for i := range page {
			size += journal.FrameSize(&page[i])
			if page[i].Sequence != after+1+uint64(i) {
				t.Fatalf("Read after %d answered record %d at %d", after, page[i].Sequence, i)
			}
		}
		if len(page) > 1 && size > maxBytes {
			t.Fatalf("Read after %d with a bound of %d bytes answered %d records of %d bytes", after, maxBytes, len(page), size)
		}
		if after == 0 && len(page) != want {
			t.Errorf("the first page holds %d records; want %d, as many as fit the bound", len(page), want)
		}
		after = page[len(page)-1].Sequence
	}
}
