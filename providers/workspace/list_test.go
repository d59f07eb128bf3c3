package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A directory of fewer entries than the list's cap, whose path and names
// are long and escaped by JSON byte by byte ('<' becomes "\u003c"), would
// answer more than Brain takes: the list is cut at its byte bound instead,
// with truncated set, and answers the entries it keeps whole and in
// order, as many as fit.
func TestListBoundsItsAnswerInBytes(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "list", map[string]any{}, nil), nil) // allocates the workspace
	ws := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
	long := strings.Repeat("<", 250)
	var parts []string
	for i := range 12 {
		parts = append(parts, fmt.Sprintf("%s%02d", long, i))
	}
	dir := path.Join(parts...)
	if err := os.MkdirAll(filepath.Join(ws, dir), 0o700); err != nil {
		t.Fatal(err)
	}
	const files = 2000 // each entry answers 19 KiB: 38 MiB in all
	var want []toolset.Entry
	for i := range files {
		name := fmt.Sprintf("%s%05d", long, i)
		if err := os.WriteFile(filepath.Join(ws, dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, toolset.Entry{Path: dir + "/" + name, Type: toolset.TypeFile, Size: 1})
	}
	r := f.exec(c, "list", map[string]any{"path": dir}, nil)
	var list toolset.ListOutput
	ok(t, r, &list)
	if len(r.Output) > maxListBytes || len(r.Output) > envapi.MaxResponseBytes/2 {
		t.Errorf("list answered %d bytes, more than its bound of %d", len(r.Output), maxListBytes)
	}
	n := len(list.Entries)
	if !list.Truncated || n == 0 || n >= files {
		t.Fatalf("list of %d entries answered %d, truncated %v", files, n, list.Truncated)
	}
	for i, e := range list.Entries {
		if e != want[i] {
			t.Fatalf("entry %d is %.60q..., want %.60q...", i, e.Path, want[i].Path)
		}
	}
	next, err := json.Marshal(want[n])
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output)+len(next)+8 <= maxListBytes {
		t.Errorf("list cut after %d entries (%d bytes), though the next one (%d bytes) fits", n, len(r.Output), len(next))
	}
}
