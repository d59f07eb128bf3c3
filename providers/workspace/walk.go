package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// walkRoot walks the tree at start inside r as fs.WalkDir does (lexical
// order, fn called for a directory before it is read and again with the
// error when reading it fails, fs.SkipDir and fs.SkipAll), but through r
// itself rather than r.FS(): the fs.FS of a root refuses every name that
// is not UTF-8, so a directory so named would be reported unreadable and
// its contents never reached. start, like every path handed to fn, is
// slash-separated and relative to r. Each directory is read through its
// parent held open, so that a tree thousands of directories deep costs
// no lookup of every path from r. The walk stops once ctx ends, failing
// with its cause, between two entries and between two parts of a large
// directory's reading.
func walkRoot(ctx context.Context, r *os.Root, start string, fn fs.WalkDirFunc) error {
	info, err := r.Stat(start)
	if err != nil {
		err = fn(start, nil, err)
	} else {
		err = walkRootDir(ctx, r, nil, start, fs.FileInfoToDirEntry(info), fn)
	}
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walkRootDir is walkRoot below name, whose parent directory is open as
// parent (nil: reached from r).
func walkRootDir(ctx context.Context, r, parent *os.Root, name string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err := fn(name, d, nil); err != nil || !d.IsDir() {
		if errors.Is(err, fs.SkipDir) && d.IsDir() {
			err = nil
		}
		return err
	}
	dir := openRootDir(r, parent, name)
	if dir != nil {
		defer dir.Close()
	}
	entries, err := readRootDir(ctx, r, dir, name)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		if err = fn(name, d, err); err != nil {
			if errors.Is(err, fs.SkipDir) {
				err = nil
			}
			return err
		}
	}
	for _, e := range entries {
		if err := walkRootDir(ctx, r, dir, path.Join(name, e.Name()), e, fn); err != nil {
			if errors.Is(err, fs.SkipDir) {
				break
			}
			return err
		}
	}
	return nil
}

// openRootDir opens the directory name inside r, through parent where it
// is open; nil where it cannot be opened (readRootDir then reads it from
// r, and reports why it cannot).
func openRootDir(r, parent *os.Root, name string) *os.Root {
	var dir *os.Root
	var err error
	if parent != nil {
		dir, err = parent.OpenRoot(path.Base(name))
	} else {
		dir, err = r.OpenRoot(name)
	}
	if err != nil {
		return nil
	}
	return dir
}

// readBatch is how many entries readRootDir reads between two looks at
// its context.
const readBatch = 1024

// readRootDir reads the directory name inside r, open as dir (nil: not
// open), sorted by name. It stops reading once ctx ends.
func readRootDir(ctx context.Context, r, dir *os.Root, name string) ([]fs.DirEntry, error) {
	var f *os.File
	var err error
	if dir != nil {
		f, err = dir.Open(".")
	} else {
		f, err = r.Open(name)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var entries []fs.DirEntry
	for ctx.Err() == nil {
		var batch []fs.DirEntry
		batch, err = f.ReadDir(readBatch)
		entries = append(entries, batch...)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			break
		}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
