package datadir

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// WriteFileAtomic replaces path with data so that a crash leaves its old or
// its new content; it is fsutil.WriteFileAtomic.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return fsutil.WriteFileAtomic(path, data, perm)
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable; it is fsutil.SyncDir.
func SyncDir(dir string) error { return fsutil.SyncDir(dir) }

// mkdirAll creates dir and the parents it is missing, as os.MkdirAll does
// (mode 0700), and fsyncs the parent of every directory it creates once
// that directory is made, so that a crash cannot lose the entry of a
// directory whose files were later made durable. Errors are those of
// os.Mkdir and SyncDir; a symbolic link to nothing at dir fails with the
// link's "file exists".
func mkdirAll(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
			return err
		}
		// Made meanwhile by another process: its entry is made durable
		// all the same.
	}
	return SyncDir(parent)
}
