//go:build unix

package journal

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A session directory that is a symbolic link, to a session's directory
// elsewhere or to nothing, is listed and refused as damaged, naming the
// link: nothing is read or appended through it. Deleting the session
// removes the link and leaves what it names alone; the id then starts a
// new session in a directory of its own.
func TestLinkedSessionDirectoryIsDamaged(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 3, nil)
	fill(t, dir, "plain", 2, nil)
	moved := filepath.Join(t.TempDir(), "s")
	if err := os.Rename(filepath.Join(dir, "s"), moved); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "s")
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	seg := segPath(moved, "", 1)
	before, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}

	fs := openT(t, dir, nil)
	ids, err := fs.Sessions(bg)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if want := []string{"dangling", "plain", "s"}; !slices.Equal(ids, want) {
		t.Fatalf("Sessions = %v, want %v", ids, want)
	}
	for _, id := range []string{"s", "dangling"} {
		_, err := fs.Read(bg, id, 0, 10, 0)
		var de *DamagedError
		if !errors.As(err, &de) || de.File != filepath.Join(dir, id) {
			t.Errorf("Read %s = %v, want a DamagedError naming its link", id, err)
		}
		if err := fs.Append(bg, id, 4, numbered(4, 1)); !errors.Is(err, ErrDamaged) {
			t.Errorf("Append %s = %v, want ErrDamaged", id, err)
		}
	}
	if n, err := fs.Next(bg, "plain"); err != nil || n != 3 {
		t.Errorf("Next plain = %d, %v; want 3", n, err)
	}
	if after, err := os.ReadFile(seg); err != nil || string(after) != string(before) {
		t.Fatalf("the linked journal changed (%v)", err)
	}

	if err := fs.Delete(bg, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link after Delete: %v; want it gone", err)
	}
	if after, err := os.ReadFile(seg); err != nil || string(after) != string(before) {
		t.Fatalf("Delete changed what the link named (%v)", err)
	}
	if err := fs.Append(bg, "s", 1, numbered(1, 1)); err != nil {
		t.Fatalf("Append to the deleted session = %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.IsDir() {
		t.Errorf("the new session's directory: %v, %v; want a directory", fi, err)
	}
}

// A session directory that a symbolic link replaced while the store was
// down (crashed with records in the commit log only) is never written
// through by replay, and does not keep the store from opening: every
// other session opens whole, the linked one is refused with a
// DamagedError naming the link and the place its records are kept, the
// directory the link names is left as it was, and once that directory is
// moved back into its place the next open writes every acknowledged
// record into it.
func TestReplayDoesNotWriteThroughLinkedSessionDirectory(t *testing.T) {
	dir := t.TempDir()
	// Segment writes are lost: only the commit log holds the records.
	crashedStore(t, dir, []string{"s", "plain"}, 5, func([]byte) []byte { return nil })
	link := filepath.Join(dir, "s")
	moved := filepath.Join(t.TempDir(), "s")
	if err := os.Rename(link, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		m := map[string]string{}
		err := filepath.Walk(moved, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			m[p] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := snapshot()

	replayed := map[string]int{}
	opts := *noSyncPoints
	opts.OnReplay = func(id string, recs []Record) error {
		replayed[id] += len(recs)
		return nil
	}
	fs := openT(t, dir, &opts)
	if after := snapshot(); !maps.Equal(after, before) {
		t.Fatalf("replay wrote through the link: %v became %v", before, after)
	}
	readAll(t, fs, "plain", 5)
	_, err := fs.Read(bg, "s", 0, 0, 0)
	var de *DamagedError
	if !errors.As(err, &de) || de.Session != "s" || de.File != link || !strings.Contains(de.Reason, filepath.Join(dir, ".quarantine", "s")) {
		t.Fatalf("Read of the linked session = %v, want a DamagedError naming %s and %s", err, link, filepath.Join(dir, ".quarantine", "s"))
	}
	if ids, err := fs.Sessions(bg); err != nil || !slices.Contains(ids, "s") {
		t.Errorf("Sessions = %v, %v; want s listed", ids, err)
	}
	if replayed["s"] != 5 {
		t.Errorf("OnReplay had %d records of s, want 5", replayed["s"])
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	// The log files are retired: the quarantine holds the only copy.
	if logs := logFiles(t, dir); len(logs) != 0 {
		t.Fatalf("log files %v left after the open", logs)
	}

	fs = openT(t, dir, noSyncPoints)
	if _, err := fs.Next(bg, "s"); !errors.As(err, &de) || de.File != link {
		t.Fatalf("Next of the linked session after a reopen = %v, want a DamagedError", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, link); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "s", 5)
	readAll(t, fs, "plain", 5)
	if err := fs.Append(bg, "s", 6, numbered(6, 1)); err != nil {
		t.Fatal(err)
	}
	readAll(t, fs, "s", 6)
	if _, err := os.Stat(filepath.Join(dir, ".quarantine", "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("quarantine of s after its records were written back: %v; want it gone", err)
	}
}

// A sync point that writes the live commit log into the segments again
// (after a failed flush) leaves alone a session whose directory a
// symbolic link replaced: what the link names is not written.
func TestLogRewriteDoesNotWriteThroughLinkedSessionDirectory(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, noSyncPoints)
	if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	if len(logFiles(t, dir)) == 0 {
		t.Fatal("no live commit log file")
	}
	// Another directory laid out as a session's, its segment zeros.
	seg := segPath(dir, "s", 1)
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(filepath.Join(other, "journal"), 0o700); err != nil {
		t.Fatal(err)
	}
	otherSeg := filepath.Join(other, "journal", filepath.Base(seg))
	zeros := make([]byte, len(b))
	if err := os.WriteFile(otherSeg, zeros, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "s")
	if err := os.Rename(link, filepath.Join(t.TempDir(), "s")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.rewriteFromLogs(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(otherSeg); err != nil || !bytes.Equal(after, zeros) {
		t.Fatalf("the log was written through the link into %s (%v)", otherSeg, err)
	}
}
