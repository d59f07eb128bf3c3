package fsutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tempPrefix starts the name of every temporary file WriteFileAtomic and
// ReplaceIn create.
const tempPrefix = ".tmp-"

// IsTemp tells whether name (a base name) is a temporary file that
// WriteFileAtomic may have left behind in a crash; such files may be
// removed. Names of the form .<target>.tmp-* were used before.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, tempPrefix) ||
		(strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"))
}

// IsTempOf tells whether name (a base name) is a temporary file that
// WriteFileAtomic or WriteFileExclusive may have left behind in a crash
// while writing target (a base name).
func IsTempOf(name, target string) bool {
	return strings.HasPrefix(name, tempPrefix+tempBase(target)+"-") || strings.HasPrefix(name, "."+target+".tmp-")
}

// WriteFileAtomic replaces path with data: it writes a temporary file in the
// same directory, fsyncs it, renames it over path and fsyncs the directory.
// After a crash path holds either its old content or data, never a mix.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, data, perm, false)
}

// WriteFileExclusive creates path holding data, as WriteFileAtomic does,
// unless path exists: then it fails with an error wrapping fs.ErrExist and
// leaves path alone (the complete file is linked into place, so no reader
// ever sees a partial one and two racing creators cannot both win).
func WriteFileExclusive(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, data, perm, true)
}

func writeFile(path string, data []byte, perm os.FileMode, exclusive bool) error {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	defer r.Close()
	err = ReplaceIn(r, filepath.Base(path), data, ReplaceOptions{
		Perm:      0o600,
		Prepare:   func(f *os.File) error { return f.Chmod(perm) },
		Exclusive: exclusive,
	})
	if err != nil {
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it are durable.
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsutil: sync dir %s: %w", dir, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsutil: sync dir %s: %w", dir, err)
	}
	return nil
}

// Fdatasync flushes f's data (and the metadata needed to read it back, such
// as its size) to stable storage, retrying when interrupted.
func Fdatasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fsutil: fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = datasync(f, int(fd)); serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("fsutil: fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return fmt.Errorf("fsutil: fdatasync %s: %w", f.Name(), serr)
	}
	return nil
}
