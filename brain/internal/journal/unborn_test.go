package journal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// unbornLayouts writes, under sdir, the directories a create killed before
// its first record was durable leaves behind, and answers their ids.
func unbornLayouts(t *testing.T, sdir string) []string {
	t.Helper()
	mk := func(path string) {
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(path string) {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Killed after the session's directory was made.
	mk(filepath.Join(sdir, "u-dir"))
	// After its journal directory was made.
	mk(filepath.Join(sdir, "u-journal", "journal"))
	// After its first segment was created, before a frame reached it.
	mk(filepath.Join(sdir, "u-segment", "journal"))
	touch(filepath.Join(sdir, "u-segment", "journal", segmentName(1)))
	return []string{"u-dir", "u-journal", "u-segment"}
}

// TestOpeningKeepsDamagedAndCutBytes: opening a session removes its
// directory only when it holds nothing but empty segments. A damaged
// session (its only segment, empty, is not the first) stays damaged and
// listed, and the bytes recovery cut from an incomplete first frame are
// kept, though that session, which holds no record, is not listed.
func TestOpeningKeepsDamagedAndCutBytes(t *testing.T) {
	sdir := t.TempDir()
	damagedJDir := filepath.Join(sdir, "damaged", "journal")
	if err := os.MkdirAll(damagedJDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damagedJDir, segmentName(2)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tornJDir := filepath.Join(sdir, "torn", "journal")
	if err := os.MkdirAll(tornJDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tornJDir, segmentName(1)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	torn := filepath.Join(tornJDir, segmentName(1)+".torn-0")
	if err := os.WriteFile(torn, []byte("cut"), 0o600); err != nil {
		t.Fatal(err)
	}

	fs := openT(t, sdir, nil)
	if _, err := fs.Next(bg, "damaged"); !errors.Is(err, ErrDamaged) {
		t.Errorf("Next(damaged) = %v, want ErrDamaged", err)
	}
	if next, err := fs.Next(bg, "torn"); err != nil || next != 1 {
		t.Errorf("Next(torn) = %d, %v; want 1", next, err)
	}
	if _, err := os.Stat(damagedJDir); err != nil {
		t.Errorf("directory of the damaged session after its open: %v; want it kept", err)
	}
	if _, err := os.Stat(torn); err != nil {
		t.Errorf("bytes cut by recovery after the session's open: %v; want them kept", err)
	}
	ids, err := fs.Sessions(bg)
	if err != nil || !slices.Equal(ids, []string{"damaged"}) {
		t.Errorf("Sessions = %v, %v; want [damaged]", ids, err)
	}
}

// TestOpeningUnbornSessionRemovesIt: the first use of a session whose
// directory holds no record removes the directory, and a create of the
// same session afterwards makes it again and keeps its record.
func TestOpeningUnbornSessionRemovesIt(t *testing.T) {
	for _, id := range []string{"u-dir", "u-journal", "u-segment"} {
		t.Run(id, func(t *testing.T) {
			sdir := t.TempDir()
			unbornLayouts(t, sdir)
			fs := openT(t, sdir, nil)
			if next, err := fs.Next(bg, id); err != nil || next != 1 {
				t.Fatalf("Next(%s) = %d, %v; want 1", id, next, err)
			}
			if _, err := os.Stat(filepath.Join(sdir, id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("directory of %s after its first use: %v; want it removed", id, err)
			}
			if err := fs.Append(bg, id, 1, numbered(1, 1)); err != nil {
				t.Fatalf("Append at 1 after the directory was removed = %v", err)
			}
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			fs = openT(t, sdir, nil)
			if next, err := fs.Next(bg, id); err != nil || next != 2 {
				t.Errorf("Next(%s) after reopen = %d, %v; want 2", id, next, err)
			}
			if ids, err := fs.Sessions(bg); err != nil || !slices.Contains(ids, id) {
				t.Errorf("Sessions after the create = %v, %v; want %s listed", ids, err, id)
			}
		})
	}
}

// TestOpeningKeepsCreateInFlight: the session opened while its first
// append is being written (its directory and empty segment made, its
// frames not yet written) has no record yet, and its directory is kept;
// the append succeeds and its record survives a reopen.
func TestOpeningKeepsCreateInFlight(t *testing.T) {
	sdir := t.TempDir()
	fs := openT(t, sdir, nil)
	type listing struct {
		next uint64
		err  error
		dir  error
	}
	seen := make(chan listing, 1)
	fs.segWriteHook = func(b []byte) []byte {
		// Runs on the writer, after the roll made the directory and
		// before the frames reach the segment.
		done := make(chan listing)
		go func() {
			next, err := fs.Next(bg, "new")
			_, derr := os.Stat(filepath.Join(sdir, "new", "journal", segmentName(1)))
			done <- listing{next, err, derr}
		}()
		select {
		case seen <- <-done:
		default:
		}
		return b
	}
	if err := fs.Append(bg, "new", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	l := <-seen
	if l.err != nil || l.next != 1 {
		t.Errorf("Next during the first append = %d, %v; want 1", l.next, l.err)
	}
	if l.dir != nil {
		t.Errorf("segment of a session being created after its open: %v; want it kept", l.dir)
	}
	if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"new"}) {
		t.Errorf("Sessions after the first append = %v, %v; want [new]", ids, err)
	}
	fs.closeNoSync()
	fs = openT(t, sdir, nil)
	if next, err := fs.Next(bg, "new"); err != nil || next != 2 {
		t.Errorf("Next after reopen = %d, %v; want 2", next, err)
	}
}
