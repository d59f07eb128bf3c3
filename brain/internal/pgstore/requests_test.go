package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/idem"
	"github.com/brain-in-go/brain/brain/internal/pgstore/pgtest"
)

// TestRequestsAcrossNodes: an answer recorded on one node is replayed on
// another; a different request under the key conflicts; another scope is
// independent.
func TestRequestsAcrossNodes(t *testing.T) {
	url := pgtest.Database(t)
	a, c := openDB(t, url, nil).Requests(nil), openDB(t, url, nil).Requests(nil)
	ctx := context.Background()
	d := idem.Digest([]byte("POST"), []byte("body"))
	cl, ans, err := a.Claim(ctx, "create_session", "k1", d)
	if err != nil || ans != nil || cl == nil {
		t.Fatalf("first Claim = %v, %v, %v", cl, ans, err)
	}
	if err := cl.Answer(200, []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Answer(200, nil); err == nil {
		t.Fatal("second Answer of one claim succeeded")
	}
	if _, ans, err := c.Claim(ctx, "create_session", "k1", d); err != nil || ans == nil || ans.Status != 200 || string(ans.Body) != `{"ok":true}` {
		t.Fatalf("replay on another node = %+v, %v", ans, err)
	}
	if _, _, err := c.Claim(ctx, "create_session", "k1", idem.Digest([]byte("other"))); !errors.Is(err, idem.ErrConflict) {
		t.Fatalf("different digest = %v, want ErrConflict", err)
	}
	if cl, _, err := c.Claim(ctx, "send_message.async", "k1", d); err != nil || cl == nil {
		t.Fatalf("other scope = %v, %v", cl, err)
	} else {
		cl.Answer(202, []byte("5"))
	}
	for _, k := range []string{"", string(make([]byte, 257))} {
		if _, _, err := a.Claim(ctx, "s", k, d); !errors.Is(err, idem.ErrInvalidKey) {
			t.Errorf("Claim(key of %d bytes) = %v, want ErrInvalidKey", len(k), err)
		}
	}
	if cl, _, err := a.Claim(ctx, "s", string(bytes.Repeat([]byte{0xff}, 256)), d); err != nil {
		t.Fatalf("256-byte non-UTF-8 key = %v", err)
	} else {
		cl.Answer(204, nil)
	}
}

// TestRequestsRunningElsewhereThenAmbiguous: a claim running on a live node
// is awaited by a retry on another node; once that node is gone without
// answering, the key is ambiguous, not run again.
func TestRequestsRunningElsewhereThenAmbiguous(t *testing.T) {
	url := pgtest.Database(t)
	dbA := openDB(t, url, nil)
	a, b := dbA.Requests(nil), openDB(t, url, nil).Requests(nil)
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	if _, _, err := a.Claim(ctx, "s", "k", d); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, _, err := b.Claim(wctx, "s", "k", d); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Claim while another live node runs it = %v, want to wait until the deadline", err)
	}
	// A second claim answered while b waits: b gets the answer.
	c2, _, err := a.Claim(ctx, "s", "k2", d)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *idem.Answer, 1)
	go func() {
		_, ans, err := b.Claim(ctx, "s", "k2", d)
		if err != nil {
			t.Error(err)
		}
		got <- ans
	}()
	time.Sleep(50 * time.Millisecond)
	c2.Answer(201, []byte("done"))
	if ans := <-got; ans == nil || ans.Status != 201 {
		t.Fatalf("waiter on another node got %+v", ans)
	}
	dbA.Close() // the node ends without answering k
	if _, _, err := b.Claim(ctx, "s", "k", d); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("Claim of a dead node's unanswered claim = %v, want ErrAmbiguous", err)
	}
	if _, _, err := b.ClaimHinted(ctx, "s", "k", d, []byte("h")); !errors.Is(err, idem.ErrAmbiguous) {
		t.Fatalf("ClaimHinted of it = %v, want ErrAmbiguous", err)
	}
}

// TestRequestsSameProcess: concurrent claims of one key in one process wait
// for the first; a release frees the key; a claim this process failed to
// answer is ambiguous.
func TestRequestsSameProcess(t *testing.T) {
	url := pgtest.Database(t)
	r := openDB(t, url, nil).Requests(nil)
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	c, _, err := r.Claim(ctx, "s", "k", d)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			_, ans, err := r.Claim(ctx, "s", "k", d)
			if err != nil || ans == nil || ans.Status != 200 {
				t.Errorf("waiter = %+v, %v", ans, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	c.Answer(200, []byte("a"))
	wg.Wait()

	rel, _, _ := r.Claim(ctx, "s", "free", d)
	if err := rel.Release(); err != nil {
		t.Fatal(err)
	}
	if c2, _, err := r.Claim(ctx, "s", "free", idem.Digest([]byte("y"))); err != nil || c2 == nil {
		t.Fatalf("claim after release = %v, %v", c2, err)
	}

	h, _, err := r.ClaimHinted(ctx, "s", "hinted", d, []byte("s1@5"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AnswerDerivable(202, []byte("5")); err != nil {
		t.Fatal(err)
	}
	if _, ans, err := r.Claim(ctx, "s", "hinted", d); err != nil || ans == nil || string(ans.Body) != "5" {
		t.Fatalf("replay of a derivable answer = %+v, %v", ans, err)
	}
	plain, _, _ := r.Claim(ctx, "s", "plain", d)
	if err := plain.AnswerDerivable(200, nil); err == nil {
		t.Fatal("AnswerDerivable of a plain claim succeeded")
	}
}

// TestRequestsRetention: entries expire after their last record, as the
// database's clock counts; the key then runs anew.
func TestRequestsRetention(t *testing.T) {
	url := pgtest.Database(t)
	// advance ages every row as the database's clock passing would.
	advance := func(d time.Duration) {
		sqlExec(t, url, `UPDATE brain_requests SET claimed_at = claimed_at - make_interval(secs => $1), at = at - make_interval(secs => $1)`, d.Seconds())
	}
	r := openDB(t, url, nil).Requests(&idem.Options{Retention: 24 * time.Hour})
	ctx := context.Background()
	d := idem.Digest([]byte("x"))
	c, _, _ := r.Claim(ctx, "s", "k", d)
	c.Answer(200, []byte("a"))
	advance(23 * time.Hour)
	if _, ans, _ := r.Claim(ctx, "s", "k", d); ans == nil {
		t.Fatal("answer forgotten before retention ended")
	}
	if r.Len() != 1 {
		t.Fatalf("Len = %d, want 1", r.Len())
	}
	advance(2 * time.Hour)
	if r.Len() != 0 {
		t.Fatalf("Len after expiry = %d, want 0", r.Len())
	}
	c2, ans, err := r.Claim(ctx, "s", "k", idem.Digest([]byte("new")))
	if err != nil || ans != nil || c2 == nil {
		t.Fatalf("after retention Claim = %v, %+v, %v; want a fresh claim", c2, ans, err)
	}
	c2.Answer(200, []byte("b"))
}
