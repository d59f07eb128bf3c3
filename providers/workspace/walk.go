package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// walkRoot walks the tree at start inside r as fs.WalkDir does (lexical
// order, fn called for a directory before it is read and again with the
// error when reading it fails, fs.SkipDir and fs.SkipAll), but through r
// itself rather than r.FS(): the fs.FS of a root refuses every name that
// is not UTF-8, so a directory so named would be reported unreadable and
// its contents never reached. start, like every path handed to fn, is
// slash-separated and relative to r. Below start the tree is walked by
// walkTree, one name at a time from a directory held open, so that a
// tree thousands of directories deep costs no lookup of every path from
// r, and one deeper than the limit on open files is walked whole. The
// walk stops once ctx ends, failing with its cause, between two entries
// and between two parts of a large directory's reading. keep, if not
// nil, bounds the entries kept of each directory read, as for
// walkTreeKeeping.
func walkRoot(ctx context.Context, r *os.Root, start string, keep func() int, fn fs.WalkDirFunc) error {
	info, err := r.Stat(start)
	if err != nil {
		err = fn(start, nil, err)
		if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
			return nil
		}
		return err
	}
	return walkTreeKeeping(ctx, start, fs.FileInfoToDirEntry(info),
		func() (*os.File, error) { return r.Open(start) }, keep,
		func(_ *os.File, at entryPath, d fs.DirEntry, err error) error { return fn(at.String(), d, err) },
		nil)
}
