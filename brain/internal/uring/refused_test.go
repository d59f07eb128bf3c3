//go:build linux && (amd64 || arm64)

package uring

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// answerAs makes every completion answer -errno (as a kernel gives it)
// for the rest of the test, and counts the completions it changed.
func answerAs(t *testing.T, errno syscall.Errno) *int {
	t.Helper()
	n := 0
	completed = func(int32) int32 {
		n++
		return -int32(errno)
	}
	t.Cleanup(func() { completed = nil })
	return &n
}

// A kernel that refuses the flush operation itself (EINVAL before Linux
// 5.6, EOPNOTSUPP under gVisor) does not fail the flush: Wait flushes
// with fdatasync(2) and answers its result, and the ring takes no flush
// again, so its callers flush with fdatasync(2) themselves.
func TestRefusedFlushFallsBackToFdatasync(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EINVAL, syscall.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			r := newRing(t)
			calls := answerAs(t, errno)
			f := tempFile(t)
			if _, err := f.Write([]byte("data")); err != nil {
				t.Fatal(err)
			}
			fl, err := r.Fdatasync(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := waitWithin(fl); err != nil {
				t.Fatalf("Wait for a flush the kernel refused = %v, want fdatasync's success", err)
			}
			if _, err := r.Fdatasync(tempFile(t)); !errors.Is(err, errors.ErrUnsupported) {
				t.Fatalf("Fdatasync after a refusal = %v, want errors.ErrUnsupported", err)
			}
			if *calls != 1 {
				t.Fatalf("the ring completed %d flushes after refusing one", *calls-1)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close after a refusal = %v", err)
			}
		})
	}
}

// The fallback answers fdatasync's result, never success in its place:
// a descriptor fdatasync cannot sync fails, and since the refusal may be
// the descriptor's, not the operation's, the ring stays in use.
func TestRefusedFlushAnswersFdatasyncFailure(t *testing.T) {
	r := newRing(t)
	answerAs(t, syscall.EOPNOTSUPP)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	fl, err := r.Fdatasync(pw)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(fl); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Wait for a refused flush of a pipe = %v, want fdatasync's EINVAL", err)
	}
	completed = nil
	fl, err = r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatalf("Fdatasync after a pipe's refusal = %v, want the ring in use", err)
	}
	if err := waitWithin(fl); err != nil {
		t.Fatal(err)
	}
}

// A failed writeback (EIO) is the flush's failure: it is answered, not
// taken for a refusal of the operation, and the ring stays in use.
func TestFlushIOErrorIsReported(t *testing.T) {
	r := newRing(t)
	answerAs(t, syscall.EIO)
	fl, err := r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitWithin(fl); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Wait for a flush that failed with EIO = %v, want EIO", err)
	}
	if again := waitWithin(fl); !errors.Is(again, syscall.EIO) {
		t.Fatalf("second Wait = %v, want EIO", again)
	}
	completed = nil
	fl, err = r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatalf("Fdatasync after a failed flush = %v, want the ring in use", err)
	}
	if err := waitWithin(fl); err != nil {
		t.Fatal(err)
	}
}
