package idem

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// fullDiskStore opens a store on a tmpfs of 1 MiB (dir, and path in it)
// that holds the claim "done" of scope "op" answered 200 {"n":1} and the
// claim "pending", unanswered, both of digest d.
func fullDiskStore(t *testing.T) (dir, path string, s *Store, d [32]byte, pending *Claim) {
	t.Helper()
	dir = fullfs.Mount(t, 1<<20)
	path = filepath.Join(dir, "requests", "requests.log")
	s = open(t, path, nil)
	d = Digest([]byte("req"))
	done, _, err := s.Claim(t.Context(), "op", "done", d)
	if err != nil {
		t.Fatal(err)
	}
	if err := done.Answer(200, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if pending, _, err = s.Claim(t.Context(), "op", "pending", d); err != nil {
		t.Fatal(err)
	}
	return dir, path, s, d, pending
}

// TestFullDiskDoesNotStick fills a real file system under the requests
// log: claims and answers fail with ErrWrite (ENOSPC) while it is full,
// the store recovers once space is back, a claim that failed runs anew,
// an answer that failed leaves its key ambiguous, and everything is as
// expected after a reopen.
func TestFullDiskDoesNotStick(t *testing.T) {
	dir, path, s, d, pending := fullDiskStore(t)
	ctx := t.Context()

	filler := fullfs.Fill(t, dir)
	// The answer's frame needs new blocks: it fails, and the key whose
	// request ran stays ambiguous rather than runnable or answered.
	if err := pending.Answer(200, bytes.Repeat([]byte("x"), 64<<10)); !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Answer on a full disk = %v, want ErrWrite wrapping ENOSPC", err)
	}
	if err := s.Healthy(); !errors.Is(err, ErrWrite) {
		t.Fatalf("Healthy on a full disk = %v, want ErrWrite", err)
	}
	var failedKey string
	for i := 0; i < 1000 && failedKey == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		_, _, err := s.Claim(ctx, "op", k, d)
		switch {
		case err == nil:
			t.Fatalf("Claim %s succeeded on a full disk that failed a write", k)
		case errors.Is(err, ErrWrite):
			failedKey = k
		default:
			t.Fatalf("Claim %s = %v", k, err)
		}
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrWrite) && !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("Claim of the unanswered key while full = %v", err)
	}

	filler.Free(t)
	if err := s.Healthy(); err != nil {
		t.Fatalf("Healthy after space came back = %v", err)
	}
	c, a, err := s.Claim(ctx, "op", failedKey, d)
	if err != nil || a != nil {
		t.Fatalf("Claim of the key whose claim failed = %v, %v; want a fresh claim", a, err)
	}
	if err := c.Answer(201, []byte(`{"n":2}`)); err != nil {
		t.Fatalf("Answer after space came back = %v", err)
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("Claim of the key whose answer failed = %v, want ErrAmbiguous", err)
	}
	if _, a, err := s.Claim(ctx, "op", "done", d); err != nil || a == nil || string(a.Body) != `{"n":1}` {
		t.Fatalf("replay of an earlier answer = %+v, %v", a, err)
	}
	s.Close()

	s = open(t, path, nil)
	if _, a, err := s.Claim(ctx, "op", failedKey, d); err != nil || a == nil || a.Status != 201 {
		t.Fatalf("after reopen, %s = %+v, %v; want its answer", failedKey, a, err)
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("after reopen, pending = %v, want ErrAmbiguous", err)
	}
	if _, a, err := s.Claim(ctx, "op", "done", d); err != nil || a == nil {
		t.Fatalf("after reopen, done = %+v, %v", a, err)
	}
}

// TestReleaseOnFullDiskFreesTheKey releases, while the disk is full and
// the store cannot write, the claim of a request that did not run: once
// space is back the key runs anew, in this process and after a reopen,
// instead of answering ambiguous for a request that never ran.
func TestReleaseOnFullDiskFreesTheKey(t *testing.T) {
	dir, path, s, d, pending := fullDiskStore(t)
	ctx := t.Context()
	refused, _, err := s.Claim(ctx, "op", "refused", d)
	if err != nil {
		t.Fatal(err)
	}

	filler := fullfs.Fill(t, dir)
	if err := pending.Answer(200, bytes.Repeat([]byte("x"), 64<<10)); !errors.Is(err, ErrWrite) {
		t.Fatalf("Answer on a full disk = %v, want ErrWrite", err)
	}
	if err := refused.Release(); err == nil {
		t.Fatal("Release on a full disk that failed a write succeeded")
	}

	filler.Free(t)
	if err := s.Healthy(); err != nil {
		t.Fatalf("Healthy after space came back = %v", err)
	}
	c, a, err := s.Claim(ctx, "op", "refused", d)
	if err != nil || a != nil {
		t.Fatalf("Claim of the released key = %+v, %v; want a fresh claim", a, err)
	}
	c.Abandon()
	s.Close()

	s = open(t, path, nil)
	if _, _, err := s.Claim(ctx, "op", "refused", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("after reopen, the key claimed again and abandoned = %v, want ErrAmbiguous", err)
	}
	if _, _, err := s.Claim(ctx, "op", "pending", d); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("after reopen, pending = %v, want ErrAmbiguous", err)
	}
}
