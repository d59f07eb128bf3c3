package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// ErrUnsafe reports a directory or sealed file of the store that another
// user owns or may write: whoever can replace the key file or the
// directories that hold it can have later credentials sealed under a key
// they know, and whoever can write a sealed file can bring back an older
// one. As ssh does with a private key and PostgreSQL with its data
// directory, the store does not open until the operator fixes it.
var ErrUnsafe = errors.New("secrets: unsafe owner or mode")

// checkOwner refuses fi, the file at path, unless the process's effective
// user owns it (fsutil.CheckOwner). base wraps the error.
func checkOwner(base error, path string, fi fs.FileInfo) error {
	if err := fsutil.CheckOwner(path, fi); err != nil {
		return fmt.Errorf("%w: %w", base, err)
	}
	return nil
}

// checkDir refuses the directory at path unless it is a directory the
// process's effective user owns and neither group nor others may write.
func checkDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (mode %v)", ErrUnsafe, path, fi.Mode())
	}
	if err := checkOwner(ErrUnsafe, path, fi); err != nil {
		return err
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %v; group and others must not be able to write it (chmod 700 %s)", ErrUnsafe, path, m, path)
	}
	return nil
}

// checkSealedFiles refuses the sealed files in dir (sessions/) that are
// not regular files the process's effective user owns and only it may
// write (a named pipe would hold every read of it without end). Temporary
// files are left to Sweep, directories alone.
func checkSealedFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), sealedExt) || !sessionName(strings.TrimSuffix(e.Name(), sealedExt)) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		if fi.IsDir() {
			continue // not the store's: reading it fails, Sweep leaves it
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file (mode %v)", ErrUnsafe, p, fi.Mode())
		}
		if err := checkOwner(ErrUnsafe, p, fi); err != nil {
			return err
		}
		if m := fi.Mode(); m.Perm()&0o022 != 0 {
			return fmt.Errorf("%w: %s has mode %v; group and others must not be able to write it (chmod 600 %s)", ErrUnsafe, p, m, p)
		}
	}
	return nil
}
