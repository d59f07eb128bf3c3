package idem

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// A server whose requests all ride the journal writes no answer or
// release of its own, yet its requests.log is compacted: the journal's
// sync points (SyncJournaled) weigh the file as such records would, so
// it never outgrows the threshold by more than what rides between two
// sync points, and no request waits on a flush of requests.log.
func TestRidingRequestsCompactAtSyncPoints(t *testing.T) {
	now := time.Unix(1000, 0)
	path := filepath.Join(t.TempDir(), "requests.log")
	opts := &Options{Retention: time.Second, Now: func() time.Time { return now }}
	s := open(t, path, opts)
	ctx := context.Background()
	body := string(bytes.Repeat([]byte("a"), 2000))
	const (
		requests = 2500 // about 5 MiB of frames
		batch    = 25   // requests committed between two sync points
	)
	var tally atomic.Int64
	rctx := commits.With(ctx, commits.New(&tally))
	var batchBytes, largest int64
	before := fileSize(t, path) + int64(len(s.pend))
	for i := range requests {
		key := fmt.Sprint("k", i)
		c, _, err := s.ClaimRiding(rctx, "send_message", key, Digest([]byte(key)), answerAll, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if err := s.Journaled(commits.ClaimKind, c.Ride().Claim); err != nil {
			t.Fatal(err)
		}
		if err := s.Journaled(commits.AnswerKind, c.Ride().Answer(body, nil)); err != nil {
			t.Fatal(err)
		}
		rec, ok := c.Recorded()
		if !ok {
			t.Fatalf("request %d: no answer recorded by the journal", i)
		}
		if err := c.Answer(rec.Status, rec.Body); err != nil {
			t.Fatal(err)
		}
		now = now.Add(10 * time.Millisecond) // older answers expire
		if (i+1)%batch == 0 {
			s.mu.Lock()
			grown := s.size + int64(len(s.pend)) - before
			s.mu.Unlock()
			batchBytes = max(batchBytes, grown)
			if err := s.SyncJournaled(); err != nil {
				t.Fatal(err)
			}
			size := fileSize(t, path)
			largest = max(largest, size)
			before = size
		}
	}
	if tally.Load() != 0 {
		t.Errorf("requests riding the journal waited on %d flushes of requests.log, want 0", tally.Load())
	}
	if limit := compactMinBytes + batchBytes; largest > limit {
		t.Fatalf("requests.log grew to %d bytes, over the compaction threshold %d plus one batch of %d bytes", largest, compactMinBytes, batchBytes)
	}
	// The compacted file holds every live answer.
	s.Close()
	s = open(t, path, opts)
	key := fmt.Sprint("k", requests-1)
	if _, a, err := s.Claim(ctx, "send_message", key, Digest([]byte(key))); err != nil || a == nil || string(a.Body) != body {
		t.Fatalf("the last answer after a restart = %v, %v", a != nil, err)
	}
}
