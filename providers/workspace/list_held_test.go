package workspace

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// memWorkspace serves a provider whose binding s1 has run the shell
// line make in its workspace, and answers the binding's commands and the
// workspace's path. The root
// is in memory where the system offers it (/dev/shm), so that many files
// are made quickly.
func memWorkspace(t *testing.T, files int, make string) (*fixture, *envtest.Commands, string) {
	t.Helper()
	root := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "workspace-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			root = dir
		}
	}
	f := newFixture(t, Options{Root: root, MaxFiles: 2 * files})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "command", sh(make), nil), nil)
	return f, c, filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
}

// heldCounter records, for each directory name, the most entries the
// walk held of it while reading it.
func heldCounter(t *testing.T) func() map[string]int {
	t.Helper()
	var mu sync.Mutex
	most := map[string]int{}
	entriesHeld = func(name string, n int) {
		mu.Lock()
		defer mu.Unlock()
		most[name] = max(most[name], n)
	}
	t.Cleanup(func() { entriesHeld = nil })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		entriesHeld = nil
		return maps.Clone(most)
	}
}

// firstEntries is what a list of dir (inside ws, recursive or not) answers
// when it holds every entry of a directory it reads: the first
// maxListEntries of the walk in lexical order, and whether there are more.
func firstEntries(t *testing.T, ws, dir string, recursive bool) ([]toolset.Entry, bool) {
	t.Helper()
	var all []toolset.Entry
	err := fs.WalkDir(os.DirFS(ws), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if len(all) == maxListEntries+1 {
			return fs.SkipAll
		}
		var size int64
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			size = info.Size()
		}
		all = append(all, toolset.Entry{Path: p, Type: toolset.EntryType(d.Type()), Size: size})
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) > maxListEntries {
		return all[:maxListEntries], true
	}
	return all, false
}

// A list of a directory of far more entries than it answers holds, of
// that directory, only the entries it may answer (and the batch it
// reads), not the whole directory; it answers the first entries by name
// and truncated, as a list holding them all would.
func TestListOfAHugeDirectoryHoldsOnlyWhatItAnswers(t *testing.T) {
	const files = 200_000
	f, c, ws := memWorkspace(t, files, fmt.Sprintf("mkdir big && cd big && seq %d | xargs touch", files))
	held := heldCounter(t)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"path": "big"}, nil), &list)
	most := held()

	if got, bound := most["big"], maxListEntries+1+readBatch; got > bound {
		t.Errorf("the list held %d entries of big at once, more than %d", got, bound)
	}
	want, truncated := firstEntries(t, ws, "big", false)
	if !truncated || len(want) != maxListEntries {
		t.Fatalf("the reference walk of %d files answered %d entries, truncated %v", files, len(want), truncated)
	}
	if !list.Truncated {
		t.Errorf("the list of %d files is not truncated", files)
	}
	if !slices.Equal(list.Entries, want) {
		t.Errorf("the list answered %d entries, want the first %d by name", len(list.Entries), len(want))
		for i := range min(len(list.Entries), len(want)) {
			if list.Entries[i] != want[i] {
				t.Fatalf("entry %d is %+v, want %+v", i, list.Entries[i], want[i])
			}
		}
	}
}

// In a recursive list the entries it may still answer shrink as it
// answers: of a directory read after another's entries were answered it
// holds only what remains, and the answer is still that of a list
// holding every entry read.
func TestRecursiveListHoldsOnlyWhatRemains(t *testing.T) {
	const each = 9_000
	f, c, ws := memWorkspace(t, 3*each, fmt.Sprintf(
		"mkdir -p tree/a tree/b tree/c && for d in a b c; do (cd tree/$d && seq %d | xargs touch) || exit 1; done", each))
	held := heldCounter(t)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"path": "tree", "recursive": true}, nil), &list)
	most := held()

	// tree/a and its files are answered before tree/b is read.
	remain := maxListEntries - (1 + each + 1) + 1
	if got, bound := most["b"], remain+readBatch; got > bound {
		t.Errorf("the list held %d entries of tree/b at once, more than %d (%d remained to answer)", got, bound, remain)
	}
	if _, ok := most["c"]; ok {
		t.Errorf("the list read tree/c, after its bound was reached")
	}
	want, truncated := firstEntries(t, ws, "tree", true)
	if !truncated || len(want) != maxListEntries {
		t.Fatalf("the reference walk answered %d entries, truncated %v", len(want), truncated)
	}
	if !list.Truncated {
		t.Errorf("the recursive list of %d files is not truncated", 3*each)
	}
	if !slices.Equal(list.Entries, want) {
		t.Errorf("the list answered %d entries, want the first %d", len(list.Entries), len(want))
		for i := range min(len(list.Entries), len(want)) {
			if list.Entries[i] != want[i] {
				t.Fatalf("entry %d is %+v, want %+v", i, list.Entries[i], want[i])
			}
		}
	}
}
