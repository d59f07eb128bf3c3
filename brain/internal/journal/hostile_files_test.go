//go:build linux

package journal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// returns runs op and fails the test when it does not return: an open of
// the named pipe fifo that blocks is released (a reader and writer open
// it for a moment) so that op, and the test, can end.
func returns(t *testing.T, fifo string, op func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		op()
	}()
	select {
	case <-done:
		return
	case <-time.After(10 * time.Second):
	}
	t.Errorf("blocked on the named pipe %s", fifo)
	for {
		if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			f.Close()
		}
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A named pipe where a session's checkpoint belongs is no checkpoint: the
// session opens from its journal instead of waiting for a writer, reads
// answer as without a checkpoint, and the next checkpoint replaces it.
func TestCheckpointThatIsAPipeIsNoCheckpoint(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 4, nil)
	ck := filepath.Join(dir, "s", checkpointName)
	mkfifo(t, ck)
	fs := openT(t, dir, nil)
	returns(t, ck, func() {
		if n, err := fs.Next(bg, "s"); err != nil || n != 5 {
			t.Errorf("Next = %d, %v; want 5", n, err)
		}
	})
	returns(t, ck, func() {
		if _, _, err := fs.ReadCheckpoint(bg, "s"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ReadCheckpoint = %v, want ErrNotFound", err)
		}
	})
	returns(t, ck, func() {
		if err := fs.WriteCheckpoint(bg, "s", 3, []byte("p")); err != nil {
			t.Errorf("WriteCheckpoint = %v", err)
		}
	})
	returns(t, ck, func() {
		if through, p, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 3 || string(p) != "p" {
			t.Errorf("ReadCheckpoint after the write = %d, %q, %v; want 3, p", through, p, err)
		}
	})
}

// A checkpoint that is a symbolic link is replaced, never written
// through: the file it names is left as it was.
func TestCheckpointThatIsALinkIsNotWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 4, nil)
	other := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(other, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "s", checkpointName)
	if err := os.Symlink(other, ck); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, dir, nil)
	if err := fs.WriteCheckpoint(bg, "s", 3, []byte("p")); err != nil {
		t.Fatalf("WriteCheckpoint = %v", err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "keep me" {
		t.Fatalf("the file the link named holds %q (%v), want it unchanged", b, err)
	}
	if through, p, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 3 || string(p) != "p" {
		t.Fatalf("ReadCheckpoint = %d, %q, %v; want 3, p", through, p, err)
	}
}

// A named pipe where a session's first segment belongs does not stop the
// listing of sessions.
func TestSessionsListingPassesAPipe(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 2, nil)
	jdir := filepath.Join(dir, "x", "journal")
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(jdir, segmentName(1))
	mkfifo(t, first)
	fs := openT(t, dir, nil)
	returns(t, first, func() {
		ids, err := fs.Sessions(bg)
		if err != nil || len(ids) == 0 || ids[0] != "s" {
			t.Errorf("Sessions = %v, %v; want s listed", ids, err)
		}
	})
	if _, err := os.Lstat(first); err != nil {
		t.Fatalf("the pipe was removed: %v", err)
	}
}

// A named pipe where the sync point marker belongs fails the open with an
// error instead of waiting for a writer.
func TestSyncPointMarkerThatIsAPipeFailsOpen(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 2, nil)
	marker := filepath.Join(dir, ".commitlog", syncPointName)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, marker)
	returns(t, marker, func() {
		fs, err := OpenFileStore(dir, nil)
		if err == nil {
			fs.Close()
			t.Error("OpenFileStore with a pipe for a sync point marker succeeded")
		}
	})
}

// A sync point marker that is a huge file (a sparse file the size of a
// disk) is malformed: the open reports it as damage without reading it
// whole, so it cannot run the process out of memory.
func TestHugeSyncPointMarkerIsNotReadWhole(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 2, nil)
	marker := filepath.Join(dir, ".commitlog", syncPointName)
	if err := os.Truncate(marker, 1<<40); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFileStore(dir, nil)
	if err == nil {
		fs.Close()
		t.Fatal("OpenFileStore with a 1 TiB sync point marker succeeded")
	}
	var le *LogDamagedError
	if !errors.As(err, &le) {
		t.Fatalf("open = %v, want the marker reported as damage", err)
	}
}
