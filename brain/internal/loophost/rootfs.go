package loophost

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// rootFS is a guest directory over an os.Root: every path resolves inside
// the root, so neither ".." nor a symbolic link reaches outside it (the
// host answers EPERM for such a path). A read-only rootFS refuses every
// change with EROFS. The guest may not create links or symbolic links, and
// opens regular files and directories only (EPERM for a named pipe, a
// socket or a device, whose I/O could wait in the host past the deadline).
// A rootFS with a budget (a scratch directory) bounds the bytes its files
// hold and the files and directories it holds; the rootFSs of one
// invocation together hold at most maxOpenFiles open.
type rootFS struct {
	esys.UnimplementedFS
	root     *os.Root
	readOnly bool
	budget   *budget    // nil: unbounded
	files    *openFiles // the invocation's open files; nil: not counted
}

func newRootFS(dir string, readOnly bool) (*rootFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{root: r, readOnly: readOnly}, nil
}

func (r *rootFS) close() { _ = r.root.Close() }

func (r *rootFS) String() string { return r.root.Name() }

// rel maps a guest path to a path relative to the root.
func rel(p string) string {
	p = strings.TrimLeft(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// errno maps a host error, telling an escape from the root apart.
func errno(err error) esys.Errno {
	if err == nil {
		return 0
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil && strings.Contains(pe.Err.Error(), "escapes") {
		return esys.EPERM
	}
	if le := new(os.LinkError); errors.As(err, &le) && le.Err != nil && strings.Contains(le.Err.Error(), "escapes") {
		return esys.EPERM
	}
	if strings.Contains(err.Error(), "path escapes") {
		return esys.EPERM
	}
	return esys.UnwrapOSError(err)
}

func (r *rootFS) OpenFile(p string, flag esys.Oflag, perm fs.FileMode) (esys.File, esys.Errno) {
	var osflag int
	switch {
	case flag&esys.O_RDWR != 0:
		osflag = os.O_RDWR
	case flag&esys.O_WRONLY != 0:
		osflag = os.O_WRONLY
	}
	write := osflag != os.O_RDONLY || flag&(esys.O_CREAT|esys.O_TRUNC|esys.O_APPEND) != 0
	if r.readOnly && write {
		return nil, esys.EROFS
	}
	for _, f := range []struct {
		e esys.Oflag
		o int
	}{
		{esys.O_APPEND, os.O_APPEND}, {esys.O_CREAT, os.O_CREATE}, {esys.O_EXCL, os.O_EXCL},
		{esys.O_TRUNC, os.O_TRUNC}, {esys.O_SYNC, os.O_SYNC}, {esys.O_DSYNC, syscall.O_DSYNC},
		{esys.O_NOFOLLOW, syscall.O_NOFOLLOW}, {esys.O_DIRECTORY, syscall.O_DIRECTORY},
	} {
		if flag&f.e != 0 {
			osflag |= f.o
		}
	}
	if flag&esys.O_DIRECTORY != 0 && osflag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, esys.EISDIR
	}
	if r.files != nil && !r.files.take() {
		return nil, esys.EIO // EMFILE, see wasi.go
	}
	op := &opener{root: r.root, flag: osflag, perm: perm}
	open := func() (*rootFile, esys.Errno) {
		f, e := (&sysfs.AdaptFS{FS: op}).OpenFile(rel(p), flag, perm)
		if e != 0 {
			return nil, e
		}
		return &rootFile{File: f, op: op, path: rel(p), readOnly: r.readOnly, files: r.files}, 0
	}
	var f esys.File
	var e esys.Errno
	if r.budget != nil {
		f, e = r.budget.opened(r.root, rel(p), osflag&os.O_TRUNC != 0, osflag&os.O_CREATE != 0, open)
	} else {
		f, e = open()
	}
	if e != 0 {
		if r.files != nil {
			r.files.put()
		}
		return nil, e
	}
	return f, 0
}

// opener is the fs.FS of one open file: it opens through the root with the
// file's flags (creating and truncating only the first time, since a
// directory is reopened to rewind it) and remembers the file it opened.
type opener struct {
	root *os.Root
	flag int
	perm fs.FileMode
	last *os.File
}

func (o *opener) Open(name string) (fs.File, error) {
	// With O_NONBLOCK the open of a named pipe answers at once (ENXIO
	// for writing with no reader) instead of waiting for its other end,
	// which would hold the instance in the host past its deadline and a
	// cancel; plainFile then refuses it.
	f, err := o.root.OpenFile(name, o.flag|syscall.O_NONBLOCK, o.perm)
	if err != nil {
		if e := errno(err); e == esys.EPERM || errors.Is(err, syscall.ENXIO) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		}
		return nil, err
	}
	if err := plainFile(f); err != nil {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	o.flag &^= os.O_CREATE | os.O_EXCL | os.O_TRUNC
	o.last = f
	return f, nil
}

// plainFile refuses a file opened through a rootFS that is neither a
// regular file nor a directory (a named pipe, a socket, a device), whose
// reads and writes could wait in the host for as long as they liked, and
// puts the others back into blocking mode.
func plainFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return fs.ErrPermission
	}
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

func (r *rootFS) Lstat(p string) (sys.Stat_t, esys.Errno) {
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Stat(p string) (sys.Stat_t, esys.Errno) {
	fi, err := r.root.Stat(rel(p))
	if err != nil {
		return sys.Stat_t{}, errno(err)
	}
	return sys.NewStat_t(fi), 0
}

func (r *rootFS) Readlink(p string) (string, esys.Errno) {
	dst, err := r.root.Readlink(rel(p))
	if err != nil {
		return "", errno(err)
	}
	return dst, 0
}

func (r *rootFS) Mkdir(p string, perm fs.FileMode) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	mkdir := func() esys.Errno {
		if e := errno(r.root.Mkdir(rel(p), perm)); e != esys.ENOTDIR {
			return e
		}
		return esys.ENOENT
	}
	if r.budget != nil {
		return r.budget.made(r.root, rel(p), mkdir)
	}
	return mkdir()
}

func (r *rootFS) Chmod(p string, perm fs.FileMode) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	return errno(r.root.Chmod(rel(p), perm))
}

func (r *rootFS) Rename(from, to string) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	rename := func() esys.Errno { return errno(r.root.Rename(rel(from), rel(to))) }
	if r.budget != nil {
		return r.budget.remove(r.root, rel(to), rel(from), rename)
	}
	return rename()
}

func (r *rootFS) Rmdir(p string) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return errno(err)
	}
	if !fi.IsDir() {
		return esys.ENOTDIR
	}
	remove := func() esys.Errno { return errno(r.root.Remove(rel(p))) }
	if r.budget != nil {
		return r.budget.remove(r.root, rel(p), "", remove)
	}
	return remove()
}

func (r *rootFS) Unlink(p string) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	fi, err := r.root.Lstat(rel(p))
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return esys.EISDIR
	}
	remove := func() esys.Errno { return errno(r.root.Remove(rel(p))) }
	if r.budget != nil {
		return r.budget.remove(r.root, rel(p), "", remove)
	}
	return remove()
}

// Link and Symlink are refused: a guest-made link could name a file
// outside the grant for a later host reader.
func (r *rootFS) Link(string, string) esys.Errno { return esys.EPERM }

func (r *rootFS) Symlink(string, string) esys.Errno { return esys.EPERM }

func (r *rootFS) Utimens(p string, atim, mtim int64) esys.Errno {
	if r.readOnly {
		return esys.EROFS
	}
	fi, err := r.root.Stat(rel(p))
	if err != nil {
		return errno(err)
	}
	a, m := times(fi, atim, mtim)
	return errno(r.root.Chtimes(rel(p), a, m))
}

// times resolves the UTIME_OMIT and UTIME_NOW pseudo-timestamps.
func times(fi fs.FileInfo, atim, mtim int64) (time.Time, time.Time) {
	resolve := func(v int64, cur time.Time) time.Time {
		if v == esys.UTIME_OMIT {
			return cur
		}
		return time.Unix(0, v)
	}
	return resolve(atim, fi.ModTime()), resolve(mtim, fi.ModTime())
}

// rootFile is an open file of a rootFS: wazero's adapter of the
// *os.File the root opened, with the operations it lacks.
type rootFile struct {
	esys.File
	op       *opener
	path     string
	readOnly bool
	budget   *budget    // the scratch budget of a regular file, or nil
	ino      sys.Inode  // with budget
	files    *openFiles // counts the file while it is open, or nil
}

func (f *rootFile) Truncate(size int64) esys.Errno {
	if f.readOnly {
		return esys.EBADF
	}
	truncate := func() esys.Errno { return errno(f.op.last.Truncate(size)) }
	if f.budget != nil {
		return f.budget.grow(f.op.last, func(int64) (int64, error) { return size, nil }, truncate)
	}
	return truncate()
}

func (f *rootFile) Sync() esys.Errno { return errno(f.op.last.Sync()) }

func (f *rootFile) Datasync() esys.Errno { return errno(f.op.last.Sync()) }

func (f *rootFile) Utimens(atim, mtim int64) esys.Errno {
	if f.readOnly {
		return esys.EROFS
	}
	fi, err := f.op.last.Stat()
	if err != nil {
		return errno(err)
	}
	a, m := times(fi, atim, mtim)
	return errno(f.op.root.Chtimes(f.path, a, m))
}
