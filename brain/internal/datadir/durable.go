package datadir

import (
	"os"

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
