package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// trashDir holds the directories of deleted sessions while they are being
// removed (sessions/.trash/{id}); it is never a session id, since ids
// cannot start with '.'. It is created at open and kept, so that a delete
// on a full disk, where no directory can be created, still moves the
// session out of the way in one rename.
const trashDir = ".trash"

// removeSessionDir removes a deleted session's directory so that a crash
// leaves the session whole or gone: the directory is first renamed into
// trashDir and the rename made durable, then removed file by file. A
// removal cut short leaves only trash, which the next open removes. When
// trashDir does not exist and cannot be created (a full disk), the
// directory is removed in place.
func (fs *FileStore) removeSessionDir(dir string) error {
	trash := filepath.Join(fs.dir, trashDir)
	if err := os.Mkdir(trash, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("journal: remove %s: %w", dir, err)
		}
		return syncDir(fs.dir)
	}
	dst := filepath.Join(trash, filepath.Base(dir))
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("journal: remove %s: %w", dst, err)
	}
	if err := os.Rename(dir, dst); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // nothing of the session was ever written
		}
		return fmt.Errorf("journal: remove %s: %w", dir, err)
	}
	if err := syncDir(fs.dir); err != nil {
		return err
	}
	// The session is durably gone; what a failure here leaves is trash.
	_ = os.RemoveAll(dst)
	return nil
}

// removeTrash removes what deletes cut short by a crash left in trashDir,
// and creates trashDir when it is missing. Best effort: a later delete or
// open tries again.
func (fs *FileStore) removeTrash() {
	trash := filepath.Join(fs.dir, trashDir)
	entries, err := os.ReadDir(trash)
	if errors.Is(err, os.ErrNotExist) {
		if os.Mkdir(trash, 0o700) == nil {
			_ = syncDir(fs.dir)
		}
		return
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(trash, e.Name()))
	}
}
