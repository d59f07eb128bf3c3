package datadir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFormatThatIsNotAFileIsRefused: a named pipe where the format file
// belongs stops Open with ErrFormat naming it, instead of holding the
// server's start in a read that never ends; the directory is unlocked
// again.
func TestFormatThatIsNotAFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	format := filepath.Join(dir, FormatName)
	if err := syscall.Mkfifo(format, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		d, err := Open(dir)
		if d != nil {
			d.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), format) {
			t.Fatalf("Open with a named pipe for its format = %v, want ErrFormat naming %s", err, format)
		}
	case <-time.After(10 * time.Second):
		// Let the blocked read end: a writer opens the pipe and closes it.
		if f, err := os.OpenFile(format, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("Open with a named pipe for its format did not return")
	}
	if out, code := openInChild(t, dir); code != 3 || strings.Contains(out, "already in use") {
		t.Fatalf("another process after the refusal: exit %d, output %q; want the format refusal", code, out)
	}
}

// TestLargeFormatFileIsQuotedInPart: a directory whose format file is
// large and not the marker (another program's) is refused with an error
// that quotes its beginning, not the whole file, and the file is left as
// it was.
func TestLargeFormatFileIsQuotedInPart(t *testing.T) {
	dir := t.TempDir()
	format := filepath.Join(dir, FormatName)
	content := bytes.Repeat([]byte("not brain data\n"), 1<<16)
	if err := os.WriteFile(format, content, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("Open = %v, want ErrFormat", err)
	}
	if msg := err.Error(); len(msg) > 1024 || !strings.Contains(msg, `not brain data\n`) || !strings.Contains(msg, FormatMarker[:len(FormatMarker)-1]) {
		t.Fatalf("error of %d bytes %.300q: want the beginning of the file quoted and the wanted marker, in under 1 KiB", len(msg), msg)
	}
	if got, _ := os.ReadFile(format); !bytes.Equal(got, content) {
		t.Fatal("the format file was changed")
	}
}

// TestSessionsThatIsNotADirectoryIsRefused: with the marker in place, a
// sessions entry that is not a directory (a file restored in its place)
// stops Open naming it, rather than opening a data directory whose
// sessions cannot be kept; the file is left as it was.
func TestSessionsThatIsNotADirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	sessions := filepath.Join(dir, SessionsName)
	if err := os.Remove(sessions); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sessions, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir)
	if err == nil {
		d.Close()
		t.Fatal("a data directory whose sessions is a file was opened")
	}
	if !strings.Contains(err.Error(), sessions) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open = %v, want an error naming %s as not a directory", err, sessions)
	}
	if got, _ := os.ReadFile(sessions); string(got) != "mine" {
		t.Errorf("sessions file changed: %q", got)
	}
	// The refused directory is unlocked again.
	if _, err := Open(dir); err == nil || errors.Is(err, ErrInUse) {
		t.Errorf("reopen = %v, want the same refusal", err)
	}
}
