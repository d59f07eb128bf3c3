package workspace

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// TestLimitsCountFilesBelowPathMax: files whose absolute path is longer
// than the system's PATH_MAX (4096 bytes), which a write reaches through
// the workspace one name at a time, count against the workspace's limits
// and in inspect like any others; a size limit cannot be passed by
// writing deep enough.
func TestLimitsCountFilesBelowPathMax(t *testing.T) {
	f := newFixture(t, Options{MaxBytes: 1000, MaxFiles: 40})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	// 25 directories of 200-byte names: more than 5,000 bytes deep.
	deep := strings.Repeat(strings.Repeat("d", 200)+"/", 25)
	ok(t, f.exec(c, "write", map[string]string{"path": deep + "a", "content": strings.Repeat("x", 600)}, nil), nil)
	if dirs := workspaceDirs(t, f.root); len(dirs) != 1 || len(filepath.Join(f.root, "workspaces", dirs[0], deep)) <= 4096 {
		t.Fatalf("the file is not beyond PATH_MAX: workspaces %v", dirs)
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Bytes != 600 || in.Files != 26 {
		t.Errorf("inspect %+v, want 600 bytes in 26 entries", in)
	}
	fails(t, f.exec(c, "write", map[string]string{"path": deep + "b", "content": strings.Repeat("x", 600)}, nil), CodeLimitExceeded)
	fails(t, f.exec(c, "write", map[string]string{"path": "top", "content": strings.Repeat("x", 600)}, nil), CodeLimitExceeded)
	// 14 more directories and a file would be 41 entries.
	fails(t, f.exec(c, "write", map[string]string{"path": deep + strings.Repeat("e/", 14) + "f", "content": ""}, nil), CodeLimitExceeded)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"recursive": true}, nil), &list)
	if len(list.Entries) != 26 {
		t.Errorf("list has %d entries, want 26: the refused writes left something", len(list.Entries))
	}
}
