//go:build unix

package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRegular: a file of at most max bytes is read whole; a longer
// one is ErrTooLarge and a named pipe ErrNotRegular, each naming the
// file, and the pipe is refused at once rather than waited on.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	fits := filepath.Join(dir, "fits")
	if err := os.WriteFile(fits, []byte("abcd"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(fits, 4); err != nil || string(b) != "abcd" {
		t.Fatalf("ReadRegular of 4 bytes, max 4 = %q, %v", b, err)
	}
	if _, err := ReadRegular(fits, 3); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fits) {
		t.Fatalf("ReadRegular of 4 bytes, max 3 = %v, want ErrTooLarge naming %s", err, fits)
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), 4); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadRegular of a missing file = %v, want ErrNotExist", err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadRegular(pipe, 4)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), pipe) {
			t.Fatalf("ReadRegular of a named pipe = %v, want ErrNotRegular naming %s", err, pipe)
		}
	case <-time.After(5 * time.Second):
		for {
			if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
			select {
			case <-done:
				t.Fatal("ReadRegular waited on a named pipe")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}
