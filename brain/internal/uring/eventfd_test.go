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

// unreadable answers a pipe's write end, which cannot be read.
func unreadable(t *testing.T) *os.File {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	return pw
}

// unwatched answers a File the runtime's poller does not watch, as
// os.NewFile makes one when it cannot register the descriptor: it has no
// deadlines.
func unwatched(t *testing.T) *os.File {
	t.Helper()
	g, err := os.Create(filepath.Join(t.TempDir(), "unwatched"))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(g.Fd()))
	g.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "unwatched")
	t.Cleanup(func() { f.Close() })
	if err := f.SetReadDeadline(time.Now()); err == nil {
		t.Fatal("a regular file opened with os.NewFile takes a read deadline")
	}
	return f
}

// TestWaitWithoutTheEventFD: where the eventfd cannot be read, or the
// poller does not watch it, Wait still answers each flush's result and
// frees its place: the ring then holds as many flushes as before, and
// Close releases it.
func TestWaitWithoutTheEventFD(t *testing.T) {
	for name, ev := range map[string]func(*testing.T) *os.File{"unreadable": unreadable, "unwatched": unwatched} {
		t.Run(name, func(t *testing.T) {
			r := newRing(t)
			eventFD := r.ev
			r.ev = ev(t)
			t.Cleanup(func() { r.ev = eventFD })
			// Most flushes complete after Wait first looked at the
			// completion queue, so Wait meets the eventfd.
			for i := range 100 {
				f := tempFile(t)
				if _, err := f.Write([]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
				fl, err := r.Fdatasync(f)
				if err != nil {
					t.Fatalf("Fdatasync %d = %v", i, err)
				}
				if err := waitWithin(fl); err != nil {
					// A flush Wait gave up on would keep its place in
					// the ring: the next Fdatasyncs and Close tell.
					t.Errorf("Wait %d = %v", i, err)
				}
			}
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
			if err := waitWithin(bad); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("Wait for the flush of a pipe = %v, want EINVAL", err)
			}

			var fls []*Flush
			for i := range entries {
				fl, err := r.Fdatasync(tempFile(t))
				if err != nil {
					t.Fatalf("Fdatasync %d of %d = %v", i, entries, err)
				}
				fls = append(fls, fl)
			}
			for _, fl := range fls {
				if err := waitWithin(fl); err != nil {
					t.Fatal(err)
				}
			}
			r.ev = eventFD
			if err := r.Close(); err != nil {
				t.Fatalf("Close after every flush was answered = %v", err)
			}
		})
	}
}
