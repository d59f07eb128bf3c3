package fsutil

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// maxTempBase is the longest part of a file's name its temporary file's
// name repeats: with tempPrefix, "-" and at most 10 digits it stays
// within maxName.
const maxTempBase = maxName - maxTempExtra

// tempBase is the part of base a temporary file's name repeats.
func tempBase(base string) string {
	return base[:min(len(base), maxTempBase)]
}

// TempName names a temporary file of the file base:
// ".tmp-<base>-<random digits>", base cut to fit a file name.
func TempName(base string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return tempPrefix + tempBase(base) + "-" + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[:])), 10)
}

// ReplaceOptions says how ReplaceIn writes a file.
type ReplaceOptions struct {
	// Perm is the mode the temporary file is created with, less the
	// umask.
	Perm fs.FileMode
	// Prepare, when set, is called on the temporary file once the data is
	// written and before it is synced: to give it a mode past the umask,
	// or an owner.
	Prepare func(*os.File) error
	// Exclusive links the new file into place instead of renaming it over
	// the old one: when the file exists, ReplaceIn fails with an error
	// wrapping fs.ErrExist and leaves it alone.
	Exclusive bool
	// RemoveLeftovers first removes what replaces of the same file killed
	// part way left in its directory: regular files named as TempName
	// names its temporary files (or ".tmp-<base>-" and 16 hex digits, as
	// earlier releases of the workspace provider did), except those of
	// replaces still running in this process through a root of the same
	// name. It is for directories whose other files are not the caller's,
	// where no scan at open removes them (see IsTemp).
	RemoveLeftovers bool
}

// ReplaceIn replaces the file name (a path inside r) with data, or creates
// it: data is written to a temporary file in the same directory (named by
// TempName), synced, renamed over name (linked to it, with Exclusive), and
// the directory is synced. After a crash name holds its old content or
// data, never a mix. Any failure removes the temporary file and leaves
// name as it was; a process killed part way may leave the temporary file,
// which IsTemp and IsTempOf recognise and RemoveLeftovers removes. A
// symbolic link at name is replaced, not followed. Errors are those of
// package os, naming the files.
func ReplaceIn(r *os.Root, name string, data []byte, o ReplaceOptions) (err error) {
	dir, base := filepath.Split(name)
	dir = filepath.Clean(dir)
	if o.RemoveLeftovers {
		removeLeftovers(r, dir, base)
	}
	f, tmp, err := createTemp(r, dir, base, o.Perm)
	if err != nil {
		return err
	}
	defer inflight.remove(r, tmp)
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
		if err != nil || o.Exclusive {
			_ = r.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if o.Prepare != nil {
		if err = o.Prepare(f); err != nil {
			return err
		}
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if o.Exclusive {
		err = r.Link(tmp, name)
	} else {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		return err
	}
	d, err := r.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// createTemp creates a new temporary file for base in dir inside r and
// records it as in use until inflight.remove.
func createTemp(r *os.Root, dir, base string, perm fs.FileMode) (*os.File, string, error) {
	for try := 0; ; try++ {
		tmp := filepath.Join(dir, TempName(base))
		inflight.add(r, tmp)
		f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return f, tmp, nil
		}
		inflight.remove(r, tmp)
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return nil, "", err
		}
	}
}

// inflight holds the temporary files ReplaceIn is writing, by root name
// and path, so that RemoveLeftovers never takes one of them for a
// leftover.
var inflight = tempSet{m: map[string]int{}}

type tempSet struct {
	mu sync.Mutex
	m  map[string]int
}

func (s *tempSet) key(r *os.Root, tmp string) string { return filepath.Join(r.Name(), tmp) }

func (s *tempSet) add(r *os.Root, tmp string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[s.key(r, tmp)]++
}

func (s *tempSet) remove(r *os.Root, tmp string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.key(r, tmp)
	if s.m[k]--; s.m[k] <= 0 {
		delete(s.m, k)
	}
}

func (s *tempSet) has(r *os.Root, tmp string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[s.key(r, tmp)] > 0
}

// removeLeftovers removes the leftover temporary files of base in dir
// inside r (see ReplaceOptions.RemoveLeftovers). Best effort: what it
// cannot read or remove stays.
func removeLeftovers(r *os.Root, dir, base string) {
	d, err := r.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if !isLeftoverOf(n, base) {
			continue
		}
		p := filepath.Join(dir, n)
		if inflight.has(r, p) {
			continue
		}
		if fi, err := r.Lstat(p); err == nil && fi.Mode().IsRegular() {
			_ = r.Remove(p)
		}
	}
}

// isLeftoverOf tells whether name is exactly a temporary file name of
// target: TempName's form, or earlier workspace releases' (target cut to
// 200 bytes, 16 lowercase hex digits).
func isLeftoverOf(name, target string) bool {
	if rest, ok := strings.CutPrefix(name, tempPrefix+tempBase(target)+"-"); ok && len(rest) >= 1 && len(rest) <= 10 && allIn(rest, "0123456789") {
		return true
	}
	rest, ok := strings.CutPrefix(name, tempPrefix+target[:min(len(target), 200)]+"-")
	return ok && len(rest) == 16 && allIn(rest, "0123456789abcdef")
}

func allIn(s, set string) bool {
	for _, c := range s {
		if !strings.ContainsRune(set, c) {
			return false
		}
	}
	return true
}
