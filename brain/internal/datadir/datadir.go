package datadir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/brain-in-go/brain/internal/fsutil"
)

// FormatMarker is the content of the format file this version writes and
// accepts.
const FormatMarker = "brain-data/1\n"

// Names of the entries Open manages.
const (
	LockName     = ".lock"
	FormatName   = "format"
	SessionsName = "sessions"
)

// Errors reported by Open.
var (
	ErrInUse    = errors.New("datadir: directory is already in use")
	ErrNotEmpty = errors.New("datadir: directory is not empty and has no format marker")
	ErrFormat   = errors.New("datadir: unsupported format marker")
	ErrClosed   = errors.New("datadir: directory is closed")
)

// Dir is an open, locked data directory.
type Dir struct {
	path string
	lock *os.File
	self *os.File // the directory itself, flocked as well; nil where it cannot be
}

// Open creates (if needed), locks and checks the data directory at path.
// The lock is held until Close or the end of the process.
func Open(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	if err := mkdirAll(abs); err != nil {
		if target, lerr := os.Readlink(abs); lerr == nil && errors.Is(err, fs.ErrExist) {
			// A link to nothing: creating the directory fails with the
			// bare "file exists" of the link itself.
			return nil, fmt.Errorf("datadir: %s is a symbolic link to %s, which does not exist: %w", abs, target, err)
		}
		return nil, fmt.Errorf("datadir: create %s: %w", abs, err)
	}
	self, err := lockSelf(abs)
	if err != nil {
		return nil, err
	}
	lockPath := filepath.Join(abs, LockName)
	created := true
	lock, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		created = false
		lock, err = os.OpenFile(lockPath, os.O_RDWR, 0o600)
	}
	if err != nil {
		closeFile(self)
		return nil, fmt.Errorf("datadir: open lock: %w", err)
	}
	if err := flock(lock); err != nil {
		lock.Close()
		closeFile(self)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by another process (%s)", ErrInUse, abs, LockName)
		}
		return nil, fmt.Errorf("datadir: lock %s: %w", abs, err)
	}
	d := &Dir{path: abs, lock: lock, self: self}
	if err := d.check(); err != nil {
		if created && errors.Is(err, ErrNotEmpty) {
			// A directory that is not Brain's is left as it was found:
			// without the lock file this Open made in it.
			_ = os.Remove(lockPath)
		}
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Dir) check() error {
	marker, err := readFormat(filepath.Join(d.path, FormatName))
	switch {
	case err == nil:
		if marker != FormatMarker {
			return fmt.Errorf("%w: %s holds %s, want %q", ErrFormat, filepath.Join(d.path, FormatName), marker, FormatMarker)
		}
		return d.ensureSessions()
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	others, err := entriesBesidesLock(d.path)
	if err != nil {
		return err
	}
	// A first Open cut short (a kill or crash before the marker was
	// renamed into place) leaves the marker's temporary file: it is this
	// Open's to remove, once nothing else is found.
	foreign := slices.DeleteFunc(slices.Clone(others), func(n string) bool { return fsutil.IsTempOf(n, FormatName) })
	if len(foreign) > 0 {
		return fmt.Errorf("%w: %s holds %s", ErrNotEmpty, d.path, describe(others))
	}
	for _, n := range others {
		if err := os.Remove(filepath.Join(d.path, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("datadir: remove %s: %w", filepath.Join(d.path, n), err)
		}
	}
	if err := WriteFileAtomic(filepath.Join(d.path, FormatName), []byte(FormatMarker), 0o600); err != nil {
		return err
	}
	if err := d.ensureSessions(); err != nil {
		return err
	}
	return SyncDir(d.path)
}

// maxShownFormat bounds how much of a format file that is not the marker
// an error quotes.
const maxShownFormat = 64

// readFormat answers the format file at path, or an error wrapping
// os.ErrNotExist when there is none. Only a regular file is read, and
// only its first bytes: a named pipe or a device in its place is refused
// with ErrFormat rather than read without end, and a large file that is
// not the marker is quoted in part. The answer equals FormatMarker only
// for the marker itself; any other content is answered quoted, with
// "..." when it was cut.
func readFormat(path string) (string, error) {
	// Opened without waiting and checked once open: what is read is what
	// was checked, even if the name changed in between.
	f, _, err := fsutil.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if errors.Is(err, fsutil.ErrNotRegular) {
		return "", fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if err != nil {
		return "", fmt.Errorf("datadir: read format: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxShownFormat+1))
	if err != nil {
		return "", fmt.Errorf("datadir: read format: %w", err)
	}
	if string(b) == FormatMarker {
		return FormatMarker, nil
	}
	if len(b) > maxShownFormat {
		return strconv.Quote(string(b[:maxShownFormat])) + "...", nil
	}
	return strconv.Quote(string(b)), nil
}

// ensureSessions creates sessions/ when it is missing and makes its entry
// durable. Anything but a directory in its place is refused.
func (d *Dir) ensureSessions() error {
	p := filepath.Join(d.path, SessionsName)
	err := os.Mkdir(p, 0o700)
	if errors.Is(err, os.ErrExist) {
		fi, serr := os.Stat(p)
		if serr != nil {
			return fmt.Errorf("datadir: %w", serr)
		}
		if !fi.IsDir() {
			return fmt.Errorf("datadir: %s is not a directory (mode %v)", p, fi.Mode())
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	return SyncDir(d.path)
}

func entriesBesidesLock(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("datadir: list %s: %w", dir, err)
	}
	var others []string
	for _, n := range names {
		if n != LockName {
			others = append(others, n)
		}
	}
	sort.Strings(others)
	return others, nil
}

func describe(names []string) string {
	const show = 5
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// Path joins elem to the data directory's absolute path.
func (d *Dir) Path(elem ...string) string {
	return filepath.Join(append([]string{d.path}, elem...)...)
}

// Close releases the locks. The Dir must not be used afterwards.
func (d *Dir) Close() error {
	if d.lock == nil {
		return ErrClosed
	}
	err := d.lock.Close() // closing the descriptor releases the flock
	d.lock = nil
	if d.self != nil {
		err = errors.Join(err, d.self.Close())
		d.self = nil
	}
	return err
}
