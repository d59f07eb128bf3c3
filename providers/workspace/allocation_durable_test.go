package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// An allocation makes the new workspace directory durable — the directory
// itself, with its mark, and its entry in the workspaces directory — before
// the binding's state records it as ready: a power loss between the two
// could otherwise keep a state naming a directory the disk never had, and
// the fresh workspace would be reported lost. The syncs are the real ones;
// the test only records which directories were synced by the time the
// state file says ready.
func TestAllocationSyncsDirectoryBeforeStateRecordsIt(t *testing.T) {
	var mu sync.Mutex
	var synced []string
	var atReady [][]string // the directories synced when a ready state was written
	syncDir = func(dir string) error {
		mu.Lock()
		synced = append(synced, filepath.Clean(dir))
		mu.Unlock()
		return fsutil.SyncDir(dir)
	}
	writeState = func(path string, data []byte, perm os.FileMode) error {
		var rec record
		if err := json.Unmarshal(data, &rec); err == nil && rec.Phase == phaseReady {
			mu.Lock()
			atReady = append(atReady, slices.Clone(synced))
			mu.Unlock()
		}
		return fsutil.WriteFileAtomic(path, data, perm)
	}
	t.Cleanup(func() {
		syncDir = fsutil.SyncDir
		writeState = fsutil.WriteFileAtomic
	})

	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)

	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v, want one", dirs)
	}
	wsRoot := filepath.Join(f.root, "workspaces")
	dir := filepath.Join(wsRoot, dirs[0])
	mu.Lock()
	defer mu.Unlock()
	if len(atReady) != 1 {
		t.Fatalf("the state recorded the workspace ready %d times, want once", len(atReady))
	}
	for _, want := range []string{dir, wsRoot} {
		if !slices.Contains(atReady[0], want) {
			t.Errorf("%s was not synced before the state recorded the workspace ready (synced: %v)", want, atReady[0])
		}
	}
	// The root's entries for the workspaces and state directories are
	// durable from the start.
	if !slices.Contains(synced, filepath.Clean(f.root)) {
		t.Errorf("the root %s was never synced (synced: %v)", f.root, synced)
	}
}
