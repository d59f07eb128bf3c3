// Package pipetest puts named pipes where a program expects one of its
// files, and checks that the program never waits on one: opening or
// reading a named pipe blocks until something writes to it, so a pipe in
// place of a key, a token or a marker would otherwise hold a server's
// start for ever.
package pipetest

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// Make makes a named pipe at path, skipping the test on a system that
// cannot.
func Make(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo %s: %v", path, err)
	}
}

// Within runs fn, which opens or reads what is at path (a named pipe),
// and answers what it answered. When fn has not returned within d, the
// test fails: the pipe is then opened for writing and closed, again and
// again, until fn returns, so that the blocked open or read ends and the
// test with it.
func Within[T any](t testing.TB, path string, d time.Duration, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
	}
	for {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		select {
		case v := <-done:
			t.Errorf("%s: waited on the named pipe for more than %v", path, d)
			return v
		case <-time.After(10 * time.Millisecond):
		}
	}
}
