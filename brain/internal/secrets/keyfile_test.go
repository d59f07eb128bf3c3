package secrets

import (
	"errors"
	"os"
	"path/filepath"
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
