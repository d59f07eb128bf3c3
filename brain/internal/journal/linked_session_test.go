//go:build unix

package journal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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
