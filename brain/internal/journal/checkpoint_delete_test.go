package journal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCheckpointRacingDeleteLeavesNothing: a checkpoint whose write
// begins after a Delete of its session removed the journal is refused;
// it does not bring the session's directory back (a restart would list
// the deleted session) nor leave a checkpoint of the deleted records for
// a new session of the same id.
func TestCheckpointRacingDeleteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	fs.ckHook = func() {
		fs.ckHook = nil
		if err := fs.Delete(bg, "s"); err != nil {
			t.Errorf("Delete = %v", err)
		}
	}
	if err := fs.WriteCheckpoint(bg, "s", 3, []byte("old")); !errors.Is(err, ErrConflict) {
		t.Errorf("WriteCheckpoint racing a Delete = %v, want ErrConflict", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session directory after Delete: %v, want it gone", err)
	}
	fs.Close()
	fs = openT(t, dir, nil)
	if ids, err := fs.Sessions(bg); err != nil || slices.Contains(ids, "s") {
		t.Fatalf("Sessions after a restart = %v, %v; want the deleted session gone", ids, err)
	}
	// A new session of the same id with records of the same sizes.
	if err := fs.Append(bg, "s", 1, numbered(1, 5)); err != nil {
		t.Fatal(err)
	}
	if through, p, err := fs.ReadCheckpoint(bg, "s"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadCheckpoint of the new session = %d, %q, %v; want ErrNotFound", through, p, err)
	}
}
