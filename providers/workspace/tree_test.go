package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A tree deeper than the directories a walk holds open, with entries
// left to visit at every level after its deepest part (a directory and a
// file after each level's subdirectory), is walked as fs.WalkDir walks
// it, entry for entry and in the same order, sizes included; and removed
// whole.
func TestWalkBeyondOpenDirectoriesMatchesWalkDir(t *testing.T) {
	base := t.TempDir()
	dir := base
	for i := range 3 * maxOpenDirs {
		for _, sub := range []string{"a", "b/c"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "z"), []byte(strings.Repeat("z", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Below PATH_MAX: fs.WalkDir goes by path.
		dir = filepath.Join(dir, "a")
	}
	type seen struct {
		path string
		size int64
	}
	var want, got []seen
	err := fs.WalkDir(os.DirFS(base), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want = append(want, seen{p, fi.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = walkRoot(context.Background(), r, ".", nil, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		got = append(got, seen{p, fi.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The start's size is its own directory's, as Stat gives it.
	if len(got) > 0 && len(want) > 0 {
		got[0].size = want[0].size
	}
	if !slices.Equal(got, want) {
		t.Errorf("the walk saw %d entries, fs.WalkDir %d", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("entry %d: %v, fs.WalkDir %v", i, got[i], want[i])
			}
		}
	}
	if err := removeTree(base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(base); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the tree is still there: %v", err)
	}
}
