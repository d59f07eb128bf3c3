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
	for it := range iterations {
		dir := t.TempDir()
		fill(t, dir, "keep", 3, deleteOpts)
		fs := openT(t, dir, deleteOpts)
		const n = 1500
		if err := fs.Append(bg, "d", 1, numbered(1, n)); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteCheckpoint(bg, "d", n, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		fs.Close()
		if segs, _ := filepath.Glob(filepath.Join(dir, "d", "journal", "*.segment")); len(segs) < 300 {
			t.Fatalf("%d segments, want many", len(segs))
		}

		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), deleteChildEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: child = %v (%s), want it killed during the delete", it, err, stderr.String())
		}

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
			if err != nil || len(rs) != n {
				t.Fatalf("iteration %d: Read of the whole session = %d records, %v", it, len(rs), err)
			}
		default:
			t.Fatalf("iteration %d: the session holds %d of its %d records", it, next-1, n)
		}
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
	}
}
