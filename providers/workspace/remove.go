package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// removeWorkspace is the removal teardown, reset and a wiping release run:
// removeTree, which a test replaces to hold or kill the provider part-way.
var removeWorkspace = removeTree

// removeTree removes the workspace directory path and everything in it. A
// command may leave directories it cannot write into (a Go module cache, a
// chmod -R a-w) whose entries a provider that is not root cannot unlink;
// the provider owns them all the same, so when removal is refused it makes
// every directory of the tree writable and tries again. Both walk the
// tree with walkTree, so that a tree of any depth is removed in time
// linear in its size, holding a bounded number of directories open, and
// no symbolic link is ever followed: a mode outside the workspace is never
// changed.
func removeTree(path string) error {
	err := removeAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	unlockTree(path)
	return removeAll(path)
}

// removeAll is os.RemoveAll of path, which holds a directory open for each
// level of the tree and so fails on a tree deeper than the limit on open
// files. Where an entry cannot be removed it goes on with the others and
// answers a permission failure if there was one (removeTree then unlocks
// the tree), else the first failure.
func removeAll(path string) error {
	err := os.Remove(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	parent, perr := os.Open(filepath.Dir(path))
	if errors.Is(perr, fs.ErrNotExist) {
		return nil
	}
	if perr != nil {
		return perr
	}
	defer parent.Close()
	base := filepath.Base(path)
	var st unix.Stat_t
	if serr := unix.Fstatat(int(parent.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(serr, unix.ENOENT) {
		return nil
	} else if serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return err
	}
	var first, denied error
	// The path of an entry is built only for the failures kept: every
	// directory above one that cannot be emptied fails too, and a path
	// thousands of levels deep is long.
	fail := func(op string, at entryPath, err error) {
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		keepFirst := first == nil
		keepDenied := denied == nil && errors.Is(err, fs.ErrPermission)
		if !keepFirst && !keepDenied {
			return
		}
		err = &fs.PathError{Op: op, Path: filepath.Join(path, at.String()), Err: err}
		if keepFirst {
			first = err
		}
		if keepDenied {
			denied = err
		}
	}
	rmdir := func(dir *os.File, at entryPath) {
		if err := unix.Unlinkat(int(dir.Fd()), at.name, unix.AT_REMOVEDIR); err != nil {
			fail("unlinkat", at, err)
		}
	}
	_ = walkTree(context.Background(), ".", dirEntryOf(base),
		func() (*os.File, error) { return openDirAt(parent, base) },
		func(dir *os.File, at entryPath, d fs.DirEntry, err error) error {
			switch {
			case dir == nil && err != nil:
				fail("open", at, err)
			case dir == nil:
			case err != nil:
				// Unreadable: removable only if empty.
				if rerr := unix.Unlinkat(int(dir.Fd()), at.name, unix.AT_REMOVEDIR); rerr != nil {
					fail("open", at, err)
				}
			case !d.IsDir():
				if uerr := unix.Unlinkat(int(dir.Fd()), at.name, 0); uerr != nil {
					fail("unlinkat", at, uerr)
				}
			}
			return nil
		},
		func(dir *os.File, at entryPath) {
			if dir == nil {
				dir, at = parent, entryPath{name: base}
			}
			rmdir(dir, at)
		})
	if denied != nil {
		return denied
	}
	return first
}

// dirEntryOf is the entry of a directory named name.
func dirEntryOf(name string) fs.DirEntry { return treeEntry{name: name, typ: fs.ModeDir} }

// traceUnlock, when set (by a test), is called with each name unlockTree
// changes the mode of, relative to the directory it is changed through.
var traceUnlock func(name string)

// unlockTree gives the owner full access to every directory under path,
// path included, as far as it can; removeTree reports what still fails.
// Each directory's mode is changed through the directory holding it, open,
// by its name alone (chmodDirAt, which follows no symbolic link), before
// the walk reads it, so that a directory made readable here is then walked.
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
	_ = walkTree(context.Background(), ".", dirEntryOf("."),
		func() (*os.File, error) { return r.Open(".") },
		func(dir *os.File, at entryPath, d fs.DirEntry, err error) error {
			if err == nil && dir != nil && d.IsDir() {
				if traceUnlock != nil {
					traceUnlock(at.name)
				}
				_ = chmodDirAt(dir, at.name, 0o700)
			}
			return nil
		}, nil)
}
