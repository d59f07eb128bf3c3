package journal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// deleteChildEnv names the store directory of deleteChild.
const deleteChildEnv = "BRAIN_JOURNAL_DELETE_CHILD_DIR"

var deleteOpts = &Options{SegmentBytes: 128}

// deleteChild deletes session "d" and SIGKILLs itself as soon as anything
// of its directory is seen gone, so that the kill lands while the delete
// is under way.
func deleteChild(dir string) {
	fs, err := OpenFileStore(dir, deleteOpts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sdir := filepath.Join(dir, "d")
	count := func() int {
		top, err := os.ReadDir(sdir)
		if err != nil {
			return 0
		}
		segs, _ := os.ReadDir(filepath.Join(sdir, "journal"))
		return len(top) + len(segs)
	}
	before := count()
	go func() {
		for count() >= before {
		}
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill() // SIGKILL
		}
	}()
	if err := fs.Delete(bg, "d"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The delete finished before the watcher saw it start.
	os.Exit(3)
}

// A process killed while it deletes a session leaves the session whole
// or gone: never a journal with some of its segments removed, which the
// next open would refuse as damaged (a deleted session coming back as one
// that can neither be read nor deleted) or read as a shorter journal.
func TestDeleteKilledLeavesSessionWholeOrGone(t *testing.T) {
	iterations := 5
	if testing.Short() {
		iterations = 2
	}
	killedDeletes(t, iterations, func(it int) bool {
		return deleteKilled(t, it, t.TempDir(), 1500, false, nil)
	})
}

// The same on a full disk, with the commit log files live when the delete
// starts: the sync point cannot write its marker there, so the delete
// retires the log files by removing them.
func TestDeleteKilledOnFullDiskLeavesSessionWholeOrGone(t *testing.T) {
	iterations := 3
	if testing.Short() {
		iterations = 1
	}
	killedDeletes(t, iterations, func(it int) bool {
		mnt := fullfs.Mount(t, 64<<20)
		full := func(t *testing.T) func() {
			f := fullfs.Fill(t, mnt)
			return func() { f.Free(t) }
		}
		return deleteKilled(t, it, filepath.Join(mnt, "sessions"), 6000, true, full)
	})
}

// The same on a file system with no inode left, where no directory can be
// created when the delete starts.
func TestDeleteKilledWithNoInodeLeftLeavesSessionWholeOrGone(t *testing.T) {
	iterations := 3
	if testing.Short() {
		iterations = 1
	}
	killedDeletes(t, iterations, func(it int) bool {
		mnt := fullfs.MountInodes(t, 64<<20, 3000)
		full := func(t *testing.T) func() {
			t.Helper()
			taken := fullfs.TakeInodes(t, mnt)
			return func() { taken.Free(t) }
		}
		return deleteKilled(t, it, filepath.Join(mnt, "sessions"), 6000, false, full)
	})
}

// deleteKilled runs deleteChild on a store in dir holding session "d" of
// n records in many segments and "keep", and checks what the kill left. With live, the
// store is stopped without a sync point, so the commit log files are live
// when the child starts. full, when set, fills the disk before the child
// starts and answers what gives the space back once the child is gone.
func deleteKilled(t *testing.T, it int, dir string, n uint64, live bool, full func(*testing.T) func()) (killed bool) {
	fill(t, dir, "keep", 3, deleteOpts)
	fs := openT(t, dir, deleteOpts)
	if err := fs.Append(bg, "d", 1, numbered(1, int(n))); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(bg, "d", n, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if live {
		fs.closeNoSync()
		if len(logFiles(t, dir)) == 0 {
			t.Fatal("no live commit log file")
		}
	} else {
		fs.Close()
	}
	free := func() {}
	if full != nil {
		free = full(t)
	}
	if segs, _ := filepath.Glob(filepath.Join(dir, "d", "journal", "*.segment")); len(segs) < int(n/5) {
		t.Fatalf("%d segments, want many", len(segs))
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), deleteChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	killed = errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	if !killed && (ee == nil || ee.ExitCode() != 3) {
		t.Fatalf("iteration %d: child = %v (%s), want it killed during the delete", it, err, stderr.String())
	}
	// Exit status 3: the delete finished before the watcher ran (a loaded
	// machine), which leaves the session gone; that is checked too, and
	// the caller runs another iteration.

	fs = openT(t, dir, deleteOpts)
	next, err := fs.Next(bg, "d")
	switch {
	case err != nil:
		t.Fatalf("iteration %d: Next of the session killed while being deleted = %v; want it whole or gone", it, err)
	case next == 1:
		if ids, _ := fs.Sessions(bg); len(ids) != 1 || ids[0] != "keep" {
			t.Fatalf("iteration %d: Sessions = %v, want [keep]", it, ids)
		}
	case next == n+1:
		rs, err := fs.Read(bg, "d", 0, 0, 0)
		if err != nil || uint64(len(rs)) != n {
			t.Fatalf("iteration %d: Read of the whole session = %d records, %v", it, len(rs), err)
		}
	default:
		t.Fatalf("iteration %d: the session holds %d of its %d records", it, next-1, n)
	}
	free()
	// The session can be deleted (again), and its id used anew.
	if err := fs.Delete(bg, "d"); err != nil {
		t.Fatalf("iteration %d: Delete after the kill = %v", it, err)
	}
	if err := fs.Append(bg, "d", 1, numbered(1, 1)); err != nil {
		t.Fatalf("iteration %d: Append to a new session of the same id = %v", it, err)
	}
	if next, err := fs.Next(bg, "keep"); err != nil || next != 4 {
		t.Fatalf("iteration %d: the other session: Next = %d, %v", it, next, err)
	}
	fs.Close()
	return killed
}

// killedDeletes runs iteration until it children were killed during
// their delete, failing when too few were among 4×it tries: a child whose
// delete finished before its watcher ran proves less, and a loaded
// machine makes some.
func killedDeletes(t *testing.T, it int, iteration func(i int) bool) {
	t.Helper()
	killed, i := 0, 0
	for ; killed < it && i < 4*it; i++ {
		if iteration(i) {
			killed++
		}
	}
	if killed < it {
		t.Fatalf("%d of %d children were killed during their delete, want %d: the others finished it first", killed, i, it)
	}
}
