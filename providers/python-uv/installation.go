package pythonuv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// dirID identifies a directory by device, inode and, where the file system
// records it, creation time: a directory removed and re-created at once
// often gets the same inode number back, but never the same birth time.
// A symbolic link is followed, as uv follows it (a .venv linking to a
// directory elsewhere): the directory it reaches is identified, so a link
// that dangles or reaches another directory is a loss.
type dirID struct {
	dev, ino uint64
	birth    int64
}

func identifyDir(path string) (dirID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return dirID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return dirID{}, fmt.Errorf("%s is not a directory", path)
	}
	return dirID{dev: uint64(st.Dev), ino: uint64(st.Ino), birth: birthTime(path)}, nil
}

func (a dirID) same(b dirID) bool {
	return a.dev == b.dev && a.ino == b.ino && (a.birth == 0 || b.birth == 0 || a.birth == b.birth)
}

// installation is a prepared installation as its preparation left it: the
// project directory and the virtual environment uv synced into it.
type installation struct {
	dir, venv     string
	dirID, venvID dirID
	known         bool
}

// venvPath is the virtual environment uv uses for the project in dir with
// the process environment env: UV_PROJECT_ENVIRONMENT (relative to dir)
// when the operator passes it, else DIR/.venv.
func venvPath(dir string, env []string) string {
	venv := ".venv"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "UV_PROJECT_ENVIRONMENT="); ok && v != "" {
			venv = v
		}
	}
	if filepath.IsAbs(venv) {
		return filepath.Clean(venv)
	}
	return filepath.Join(dir, venv)
}

// identifyInstallation records the installation of dir once it is
// prepared.
func identifyInstallation(dir string, env []string) (installation, error) {
	in := installation{dir: dir, venv: venvPath(dir, env)}
	var err error
	if in.dirID, err = identifyDir(dir); err != nil {
		return in, fmt.Errorf("project directory: %w", err)
	}
	if in.venvID, err = identifyDir(in.venv); err != nil {
		return in, fmt.Errorf("virtual environment: %w", err)
	}
	in.known = true
	return in, nil
}

// check describes how the installation was lost since it was prepared
// (removed or replaced behind the provider's back), or answers "".
func (in installation) check() string {
	if !in.known {
		return ""
	}
	for _, d := range []struct {
		what, path string
		id         dirID
	}{{"project directory", in.dir, in.dirID}, {"virtual environment", in.venv, in.venvID}} {
		now, err := identifyDir(d.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Sprintf("its %s %s was removed", d.what, d.path)
		case err != nil:
			return fmt.Sprintf("its %s %s is unusable: %v", d.what, d.path, err)
		case !now.same(d.id):
			return fmt.Sprintf("its %s %s was replaced", d.what, d.path)
		}
	}
	return ""
}
