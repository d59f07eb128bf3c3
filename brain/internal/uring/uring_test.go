//go:build linux && (amd64 || arm64)

package uring

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// newRing answers a ring, or skips where the kernel refuses io_uring
// (the callers of New fall back to fdatasync there).
func newRing(t testing.TB) *Ring {
	t.Helper()
	r, err := New()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("io_uring unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func tempFile(t testing.TB) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFlushesInFlightComplete submits as many flushes as the ring holds,
// waits for them in reverse order, and then submits again.
func TestFlushesInFlightComplete(t *testing.T) {
	r := newRing(t)
	var fls []*Flush
	for i := range entries {
		f := tempFile(t)
		if _, err := f.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		fl, err := r.Fdatasync(f)
		if err != nil {
			t.Fatalf("Fdatasync %d = %v", i, err)
		}
		fls = append(fls, fl)
	}
	if _, err := r.Fdatasync(tempFile(t)); err == nil {
		t.Fatalf("Fdatasync with %d flushes in flight succeeded", entries)
	}
	if err := r.Close(); err == nil {
		t.Fatal("Close with flushes in flight succeeded")
	}
	for i := len(fls) - 1; i >= 0; i-- {
		if err := fls[i].Wait(); err != nil {
			t.Fatalf("Wait %d = %v", i, err)
		}
	}
	fl, err := r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatalf("Fdatasync after the others completed = %v", err)
	}
	if err := fl.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestFlushFailsAsFdatasyncDoes: a flush the kernel refuses answers the
// errno fdatasync(2) answers for the same descriptor.
func TestFlushFailsAsFdatasyncDoes(t *testing.T) {
	r := newRing(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	rc, _ := pw.SyscallConn()
	var want error
	rc.Control(func(fd uintptr) { want = syscall.Fdatasync(int(fd)) })
	if want == nil {
		t.Fatal("fdatasync of a pipe succeeded")
	}
	fl, err := r.Fdatasync(pw)
	if err != nil {
		t.Fatal(err)
	}
	if got := fl.Wait(); !errors.Is(got, want) {
		t.Fatalf("Wait = %v, want %v", got, want)
	}
	// A failed flush leaves the ring usable.
	fl, err = r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestClosedRing refuses flushes after Close, and Close is idempotent.
func TestClosedRing(t *testing.T) {
	r := newRing(t)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := r.Fdatasync(tempFile(t)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Fdatasync after Close = %v, want os.ErrClosed", err)
	}
}

// TestConcurrentWaiters: flushes submitted and waited for from many
// goroutines all complete.
func TestConcurrentWaiters(t *testing.T) {
	r := newRing(t)
	errc := make(chan error)
	const n = 64
	for range n {
		go func() {
			f := tempFile(t)
			for range 5 {
				f.Write([]byte("x"))
				fl, err := r.Fdatasync(f)
				if err != nil {
					// The ring holds a few flushes; the caller then
					// flushes itself.
					err = syscall.Fdatasync(int(f.Fd()))
				} else {
					err = fl.Wait()
				}
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range n {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

var errNoAnswer = errors.New("Wait did not answer")

// waitWithin answers fl.Wait's result, or errNoAnswer when it has not
// answered within a few seconds (a flush of an empty file takes
// microseconds).
func waitWithin(fl *Flush) error {
	done := make(chan error, 1)
	go func() { done <- fl.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return errNoAnswer
	}
}

// TestWaitAgain: a flush waited for again, in turn or by several
// goroutines at once, answers the same result every time, and the ring
// still holds as many flushes as before.
func TestWaitAgain(t *testing.T) {
	r := newRing(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	bad, err := r.Fdatasync(pw)
	if err != nil {
		t.Fatal(err)
	}
	first := waitWithin(bad)
	if first == nil || errors.Is(first, errNoAnswer) {
		t.Fatalf("Wait for the flush of a pipe = %v, want its failure", first)
	}
	if again := waitWithin(bad); !errors.Is(again, first) {
		t.Fatalf("second Wait = %v, want %v", again, first)
	}

	good, err := r.Fdatasync(tempFile(t))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 4)
	for range cap(errc) {
		go func() { errc <- waitWithin(good) }()
	}
	for range cap(errc) {
		if err := <-errc; err != nil {
			t.Fatalf("Wait by one of several waiters = %v", err)
		}
	}
	if err := waitWithin(good); err != nil {
		t.Fatalf("Wait after the others = %v", err)
	}

	var fls []*Flush
	for i := range entries {
		fl, err := r.Fdatasync(tempFile(t))
		if err != nil {
			t.Fatalf("Fdatasync %d after flushes waited for twice = %v", i, err)
		}
		fls = append(fls, fl)
	}
	if _, err := r.Fdatasync(tempFile(t)); err == nil {
		t.Fatalf("Fdatasync with %d flushes in flight succeeded", entries)
	}
	for _, fl := range fls {
		if err := waitWithin(fl); err != nil {
			t.Fatal(err)
		}
	}
}
