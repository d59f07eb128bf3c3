package idem

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/commits"
)

// claimAnswer runs one request of key with body as its answer and
// answers the durable commits it waited on.
func claimAnswer(t *testing.T, s *Store, key string, body []byte) int64 {
	t.Helper()
	tally := commits.New(nil)
	ctx := commits.With(context.Background(), tally)
	c, a, err := s.Claim(ctx, "s", key, Digest([]byte(key)))
	if err != nil || a != nil || c == nil {
		t.Fatalf("claim %s = %v, %v, %v", key, c, a, err)
	}
	if err := c.Answer(200, body); err != nil {
		t.Fatalf("answer %s: %v", key, err)
	}
	return tally.Load()
}

// The running store's compaction runs inline, on the path of the request
// whose answer made the file grow: that request waits on the rewrite as
// on a commit of its own, and its count says so.
func TestCompactionCountsAsACommitOfItsRequest(t *testing.T) {
	now := time.Unix(1000, 0)
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, &Options{Retention: time.Second, Now: func() time.Time { return now }})
	if n := claimAnswer(t, s, "big", bytes.Repeat([]byte("b"), compactMinBytes)); n != 2 {
		t.Fatalf("a claim and its answer counted %d commits, want 2", n)
	}
	grown := fileSize(t, path)
	now = now.Add(2 * time.Second) // the big answer expires
	if n := claimAnswer(t, s, "next", bytes.Repeat([]byte("n"), compactMinBytes/2)); n != 3 {
		t.Errorf("the request whose answer compacted the file counted %d commits, want 3 (claim, answer, rewrite)", n)
	}
	if after := fileSize(t, path); after >= grown {
		t.Fatalf("requests.log is %d bytes, was %d: no compaction ran", after, grown)
	}
	if n := claimAnswer(t, s, "last", []byte("l")); n != 2 {
		t.Errorf("a request after the compaction counted %d commits, want 2", n)
	}
}

// After a failed write, the next request rewrites the file before its
// own record: a durable commit it waits on, and counts.
func TestRecoveryRewriteCountsAsACommitOfItsRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.log")
	s := open(t, path, nil)
	if n := claimAnswer(t, s, "a", []byte("a")); n != 2 {
		t.Fatalf("a claim and its answer counted %d commits, want 2", n)
	}
	// The descriptor refuses writes: the next write fails as a failing
	// disk's would.
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	rw := s.f
	s.f = ro
	s.mu.Unlock()
	rw.Close()
	var sink atomic.Int64
	ctx := commits.With(context.Background(), commits.New(&sink))
	if _, _, err := s.Claim(ctx, "s", "b", Digest([]byte("b"))); err == nil {
		t.Fatal("a claim on a failing file succeeded")
	}
	if n := claimAnswer(t, s, "c", []byte("c")); n != 3 {
		t.Errorf("the request that rewrote the file after the failure counted %d commits, want 3 (rewrite, claim, answer)", n)
	}
	s.Close()
	s2 := open(t, path, nil)
	for _, k := range []string{"a", "c"} {
		if _, a, err := s2.Claim(context.Background(), "s", k, Digest([]byte(k))); err != nil || a == nil {
			t.Fatalf("%s after reopen: answer %v, %v", k, a, err)
		}
	}
}
