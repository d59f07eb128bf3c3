package workspace

import (
	"errors"
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
// slash-separated and relative to r.
func walkRoot(r *os.Root, start string, fn fs.WalkDirFunc) error {
	info, err := r.Stat(start)
	if err != nil {
		err = fn(start, nil, err)
	} else {
		err = walkRootDir(r, start, fs.FileInfoToDirEntry(info), fn)
	}
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walkRootDir is walkRoot below start.
func walkRootDir(r *os.Root, name string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(name, d, nil); err != nil || !d.IsDir() {
		if errors.Is(err, fs.SkipDir) && d.IsDir() {
			err = nil
		}
		return err
	}
	entries, err := readRootDir(r, name)
	if err != nil {
		if err = fn(name, d, err); err != nil {
			if errors.Is(err, fs.SkipDir) {
				err = nil
			}
			return err
		}
	}
	for _, e := range entries {
		if err := walkRootDir(r, path.Join(name, e.Name()), e, fn); err != nil {
			if errors.Is(err, fs.SkipDir) {
				break
			}
			return err
		}
	}
	return nil
}

// readRootDir reads the directory name inside r, sorted by name.
func readRootDir(r *os.Root, name string) ([]fs.DirEntry, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
