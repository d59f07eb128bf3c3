package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Without fchmodat2(2) (Linux before 6.6) a directory's mode is changed
// through /proc; a symbolic link is refused, not followed.
func TestChmodDirByPathFollowsNoLink(t *testing.T) {
	base := t.TempDir()
	for _, dir := range []string{"ws/sub", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, dir), 0o555); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(base, "ws", "link")); err != nil {
		t.Fatal(err)
	}
	ws, err := os.Open(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := chmodDirByPath(ws, "sub", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := chmodDirByPath(ws, "link", 0o700); err == nil {
		t.Error("a symbolic link was taken for a directory")
	}
	for dir, want := range map[string]fs.FileMode{"ws/sub": 0o700, "outside": 0o555} {
		if fi, err := os.Stat(filepath.Join(base, dir)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", dir, fi, err, want)
		}
	}
}
