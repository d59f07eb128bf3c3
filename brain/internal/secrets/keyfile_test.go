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
