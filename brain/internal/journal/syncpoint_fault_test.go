package journal

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// A sync point whose flush fails while no commit log file is live (every
// acknowledged record is durable already: the last sync point retired
// the log) fails the appends of its round only. Here the file system ran
// out of inodes, so no new log file could be created, and the flush of
// the sync point taken before the next round failed as well: once the
// fault passed, appends go on without reopening the store.
func TestFailedSyncPointWithoutLogDoesNotStick(t *testing.T) {
	mnt := fullfs.MountInodes(t, 16<<20, 64)
	sdir := filepath.Join(mnt, "sessions")
	// Every round is followed by a sync point that retires its log file.
	fs := openT(t, sdir, &Options{CommitLogBytes: 1})
	if err := fs.Append(bg, "s", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	// The writer takes the sync point after it acknowledged the round.
	for deadline := time.Now().Add(10 * time.Second); fs.Stats().SyncPoints == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no sync point retired the log")
		}
	}
	// Use up the inodes: the next round cannot create its log file.
	taken := fullfs.TakeInodes(t, mnt)
	if err := fs.Append(bg, "s", 2, numbered(2, 1)); !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append without a free inode = %v, want ErrWrite wrapping ENOSPC", err)
	}
	// The sync point taken before the next round fails to flush.
	fs.syncHook = func() error { return syscall.EIO }
	if err := fs.Append(bg, "s", 2, numbered(2, 1)); !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append whose sync point failed = %v, want ErrWrite wrapping EIO", err)
	}
	fs.syncHook = nil
	taken.Free(t)
	if err := fs.Append(bg, "s", 2, numbered(2, 1)); err != nil {
		t.Fatalf("Append once the fault passed = %v, want success", err)
	}
	if err := fs.Healthy(); err != nil {
		t.Fatalf("Healthy once the fault passed = %v", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	fs = openT(t, sdir, nil)
	recs, err := fs.Read(bg, "s", 0, 0, 0)
	if err != nil || len(recs) != 2 {
		t.Fatalf("after reopen: %d records, %v; want 2", len(recs), err)
	}
}
