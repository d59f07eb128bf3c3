package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKeyFileThatIsNotAFileIsRefused: a key path that is a named pipe
// (or a device) stops Open with ErrKey, as doc.go says, instead of
// holding the server's start in a read that never ends.
func TestKeyFileThatIsNotAFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, keyName)
	if err := syscall.Mkfifo(key, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Open(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrKey) {
			t.Fatalf("Open with a named pipe for its key = %v, want ErrKey", err)
		}
	case <-time.After(10 * time.Second):
		// Let the blocked read end: a writer opens the pipe and closes it.
		if f, err := os.OpenFile(key, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("Open with a named pipe for its key did not return")
	}
}

// TestKeyLinkToNothingIsRefused: a key file that is a symbolic link to
// nothing (its target on a volume not mounted, say) stops Open with
// ErrKey naming it. A new key written in its place would leave every
// secret sealed under the real one unreadable once the volume is back.
func TestKeyLinkToNothingIsRefused(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, keyName)
	target := filepath.Join(t.TempDir(), "unmounted", keyName)
	if err := os.Symlink(target, key); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if !errors.Is(err, ErrKey) || !strings.Contains(err.Error(), key) {
		t.Fatalf("Open with a key linked to nothing = %v, want ErrKey naming %s", err, key)
	}
	if got, err := os.Readlink(key); err != nil || got != target {
		t.Fatalf("the key's link now reads %q, %v; want it kept pointing at %s", got, err, target)
	}
}

// TestKeyFileSwappedForPipeIsRefused: a key file that becomes a named
// pipe while Open looks at it (another process renames one over it) is
// refused with ErrKey; Open never holds the server's start in an open or
// a read that waits for a writer.
func TestKeyFileSwappedForPipeIsRefused(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, keyName)
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	// One named pipe and one key file, each linked in turn under a
	// temporary name renamed over the key, so that the pipe keeps a name
	// a writer can open it by.
	spare := t.TempDir()
	pipe := filepath.Join(spare, "pipe")
	file := filepath.Join(spare, "file")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.WriteFile(file, good, 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "swap")
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := file
			if i%2 == 1 {
				src = pipe
			}
			if err := os.Link(src, tmp); err == nil {
				_ = os.Rename(tmp, key)
			}
		}
	}()
	// release lets an open or read blocked on the pipe end: a writer
	// that does not wait opens it and closes it again.
	release := func() {
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		done := make(chan error, 1)
		go func() {
			_, err := readKey(key)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, ErrKey) {
				// A rename between looking up the name and opening it.
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("readKey while the key is swapped for a pipe = %v, want the key or ErrKey", err)
				}
			}
		case <-time.After(5 * time.Second):
			close(stop)
			<-swapped
			for {
				release()
				select {
				case <-done:
					t.Fatal("readKey waited on a named pipe swapped in for the key")
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}
	close(stop)
	<-swapped
}
