package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// errEscape is the error os.Root gives for a path that leaves the root. The
// os package does not export it, so it is captured once from a lexical
// escape, which os.Root refuses before touching the file system.
var errEscape = sync.OnceValue(func() error {
	r, err := os.OpenRoot(os.TempDir())
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Open("../escape-probe")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return nil
})

// isEscape reports whether err is os.Root refusing a path that leaves it.
func isEscape(err error) bool {
	e := errEscape()
	return e != nil && errors.Is(err, e)
}

// fsError maps a file-system error of a tool on path to a failure. A path
// the file system cannot resolve (a name too long, a loop of symbolic
// links) is the input's fault: invalid_input with details {"path"}.
func fsError(path string, err error) error {
	var e *envsdk.Error
	switch {
	case errors.As(err, &e):
		return e
	case isEscape(err):
		return escaped(path)
	case errors.Is(err, fs.ErrNotExist):
		return envsdk.Failf(envapi.CodeNotFound, "%s does not exist", path).WithDetails(pathDetails(path))
	case errors.Is(err, syscall.EISDIR):
		return invalidInput("%s is a directory", path)
	case errors.Is(err, syscall.ENOTDIR):
		return invalidInput("a parent of %s is not a directory", path)
	case errors.Is(err, fs.ErrExist):
		return envsdk.Failf(envapi.CodeAlreadyExists, "%s already exists", path)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return invalidInput("%s: a name in the path is longer than the file system allows", path).
			WithDetails(pathDetails(path))
	case errors.Is(err, syscall.ELOOP):
		return invalidInput("%s: too many levels of symbolic links (a loop)", path).
			WithDetails(pathDetails(path))
	}
	return envsdk.Failf(envapi.CodeExecutionFailed, "%s: %v", path, err)
}

// pathDetails are the details {"path"} of a failure of a tool on path:
// the path cut, between characters, to envapi.MaxMessageLen bytes, as the
// failure's message is and as package toolset cuts the paths it refuses,
// so that a long path never makes the answer larger than Brain takes.
func pathDetails(path string) map[string]string {
	return map[string]string{"path": envapi.Truncate(path)}
}

// escaped refuses a path that leaves the workspace through a symbolic link.
func escaped(path string) error {
	return envsdk.Failf(envapi.CodePathEscape, "path %q leaves the workspace through a symbolic link (one that leads outside, or any absolute one: only relative links inside the workspace are followed)", path).
		WithDetails(pathDetails(path))
}

// root opens the workspace as an os.Root.
func (k *call) root() (*os.Root, error) {
	r, err := os.OpenRoot(k.sp.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, envsdk.Failf(envapi.CodeResourceLost, "the workspace directory vanished: %v", err)
		}
		return nil, envsdk.Failf(envapi.CodeExecutionFailed, "open workspace: %v", err)
	}
	return r, nil
}

// resolveDir checks that p names a directory inside the workspace and
// returns its absolute path for a command's working directory.
func (k *call) resolveDir(p string) (string, error) {
	c, err := toolset.Clean(p)
	if err != nil {
		return "", err
	}
	if c == "." {
		return k.sp.path, nil
	}
	r, err := k.root()
	if err != nil {
		return "", err
	}
	defer r.Close()
	fi, err := r.Stat(c)
	if err != nil {
		return "", fsError(p, err)
	}
	if !fi.IsDir() {
		return "", invalidInput("cwd %s is not a directory", p)
	}
	// Symbolic links inside the workspace were allowed by Stat; resolve
	// them so the program starts where Stat looked.
	real, err := filepath.EvalSymlinks(filepath.Join(k.sp.path, c))
	if err != nil {
		return "", fsError(p, err)
	}
	return real, nil
}
