package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// removeWorkspace is the removal teardown, reset and a wiping release run:
// removeTree, which a test replaces to hold or kill the provider part-way.
var removeWorkspace = removeTree

// removeTree removes the workspace directory path and everything in it. A
// command may leave directories it cannot write into (a Go module cache, a
// chmod -R a-w) whose entries a provider that is not root cannot unlink;
// the provider owns them all the same, so when removal is refused it makes
// every directory of the tree writable and tries again. The directories
// are reached through os.Root, so a symbolic link never lets it change a
// mode outside the workspace.
func removeTree(path string) error {
	err := os.RemoveAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	unlockTree(path)
	return os.RemoveAll(path)
}

// unlockTree gives the owner full access to every directory under path,
// path included, as far as it can; removeTree reports what still fails.
func unlockTree(path string) {
	parent, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return
	}
	defer parent.Close()
	name := filepath.Base(path)
	if fi, err := parent.Lstat(name); err != nil || !fi.IsDir() {
		return
	}
	_ = parent.Chmod(name, 0o700)
	r, err := parent.OpenRoot(name)
	if err != nil {
		return
	}
	defer r.Close()
	// walkRoot calls the function for a directory before it reads it, so
	// a directory made readable here is then walked.
	_ = walkRoot(context.Background(), r, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != "." && d.IsDir() {
			_ = r.Chmod(p, 0o700)
		}
		return nil
	})
}
