package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
)

// dirWalk looks names up inside r one directory at a time, holding the
// directory it has reached open: a step costs one lookup, not one for
// every name of the path above it, so that a walk down a path thousands
// of directories deep is not quadratic in its depth.
type dirWalk struct {
	r    *os.Root
	dir  *os.Root // the directory at path; nil: opened when next needed
	path string   // relative to r
}

func newDirWalk(r *os.Root) *dirWalk { return &dirWalk{r: r, dir: r, path: "."} }

// lstat is Lstat of the name c in the directory reached. An error in
// opening that directory (a file there, a link leading outside) is the
// error a lookup of the whole path would give.
func (w *dirWalk) lstat(c string) (fs.FileInfo, error) {
	if w.dir == nil {
		d, err := w.r.OpenRoot(w.path)
		if err != nil {
			return nil, err
		}
		w.dir = d
	}
	return w.dir.Lstat(c)
}

// enter moves down to c, a name in the directory reached that lstat
// answered fi for. A directory is entered through the one held open;
// anything else (a symbolic link, which r follows inside itself, or a
// file) is reopened from r when next needed.
func (w *dirWalk) enter(c string, fi fs.FileInfo) {
	prev := w.dir
	w.path, w.dir = filepath.Join(w.path, c), nil
	if prev != nil && fi.IsDir() {
		if d, err := prev.OpenRoot(c); err == nil {
			w.dir = d
		}
	}
	w.release(prev)
}

// move goes to path, relative to r, which is opened when next needed.
func (w *dirWalk) move(path string) {
	w.release(w.dir)
	w.dir, w.path = nil, path
	if path == "." || path == "" {
		w.dir, w.path = w.r, "."
	}
}

func (w *dirWalk) release(d *os.Root) {
	if d != nil && d != w.r {
		d.Close()
	}
}

// close releases the directory held open.
func (w *dirWalk) close() {
	w.release(w.dir)
	w.dir = nil
}
