package loophost

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"

	esys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// scratchEntryBytes is what each file or directory of a scratch directory
// counts against its budget besides its bytes: one block of a common file
// system, so that a budget bounds the entries (and inodes) a guest can
// make as well as their bytes.
const scratchEntryBytes = 4096

// budget bounds what one scratch directory holds
// (Options.MaxScratchBytes): scratchEntryBytes for each of its files and
// directories, and the bytes of its regular files, counting every removed
// file an open file still holds as one of them. A write, a pwrite or a
// truncate that would extend a file by more than is left, and the
// creation of a file or a directory when less than scratchEntryBytes is
// left, are refused (the guest sees ENOSPC, see wasi.go) before anything
// is written or created. Bytes come back when a file shrinks, when a
// directory is removed, or when a file is removed or replaced by a rename
// and no open file holds it any more. Sizes are apparent sizes (a hole
// left by writing past the end counts as written); the names a directory
// holds are not counted beyond their entries.
type budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	open    map[sys.Inode]int  // open regular files, by inode
	removed map[sys.Inode]bool // removed while open: freed at the last close
	refused bool               // an operation was refused since takeRefused
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, open: map[sys.Inode]int{}, removed: map[sys.Inode]bool{}}
}

func inode(fi os.FileInfo) sys.Inode { return sys.NewStat_t(fi).Ino }

// grow runs op, which extends the regular file f to at most the size end
// answers for its current size, when the budget has room for it, and
// charges what f grew (or frees what it shrank). A refusal is answered as
// EIO and noted for takeRefused.
func (b *budget) grow(f *os.File, end func(size int64) (int64, error), op func() esys.Errno) esys.Errno {
	b.mu.Lock()
	defer b.mu.Unlock()
	fi, err := f.Stat()
	if err != nil {
		return errno(err)
	}
	if !fi.Mode().IsRegular() {
		return op()
	}
	before := fi.Size()
	to, err := end(before)
	if err != nil {
		return errno(err)
	}
	if to > before && to-before > b.limit-b.used {
		b.refused = true
		return esys.EIO
	}
	e := op()
	after := max(to, before)
	if fi, err := f.Stat(); err == nil {
		after = fi.Size()
	}
	b.used = max(b.used+after-before, 0)
	return e
}

// takeRefused reports whether an operation was refused since the last
// call.
func (b *budget) takeRefused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.refused
	b.refused = false
	return r
}

// admits reports whether a new entry at name fits in the budget, noting
// a refusal for takeRefused. An entry whose parent is no directory is
// admitted: creating it fails for that reason.
func (b *budget) admits(root *os.Root, name string) bool {
	if scratchEntryBytes <= b.limit-b.used {
		return true
	}
	if fi, err := root.Stat(path.Dir(name)); err != nil || !fi.IsDir() {
		return true
	}
	b.refused = true
	return false
}

// missing reports whether name is not in root.
func missing(root *os.Root, name string) bool {
	_, err := root.Lstat(name)
	return errors.Is(err, fs.ErrNotExist)
}

// opened runs open, which opens name in root (truncating it with trunc,
// creating it with create), and tracks the regular file it opened. A
// file it would create is refused as EIO, noted for takeRefused, when
// the budget has no room for its entry.
func (b *budget) opened(root *os.Root, name string, trunc, create bool, open func() (*rootFile, esys.Errno)) (esys.File, esys.Errno) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var before int64
	if trunc {
		if fi, err := root.Stat(name); err == nil && fi.Mode().IsRegular() {
			before = fi.Size()
		}
	}
	creates := create && missing(root, name)
	if creates && !b.admits(root, name) {
		return nil, esys.EIO
	}
	f, e := open()
	if creates && !missing(root, name) {
		b.used += scratchEntryBytes
	}
	if e != 0 {
		return nil, e
	}
	fi, err := f.op.last.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return f, 0
	}
	b.used = max(b.used-before+fi.Size(), 0)
	f.budget, f.ino = b, inode(fi)
	b.open[f.ino]++
	return f, 0
}

// made runs op, which creates the directory name in root, when the
// budget has room for its entry, and charges it. A refusal is answered
// as EIO and noted for takeRefused.
func (b *budget) made(root *os.Root, name string, op func() esys.Errno) esys.Errno {
	b.mu.Lock()
	defer b.mu.Unlock()
	if missing(root, name) && !b.admits(root, name) {
		return esys.EIO
	}
	e := op()
	if e == 0 {
		b.used += scratchEntryBytes
	}
	return e
}

// free gives n bytes back.
func (b *budget) free(n int64) { b.used = max(b.used-n, 0) }

// closing notes that f, a tracked file, is about to be closed; a removed
// file's bytes and entry come back with its last close.
func (b *budget) closing(f *os.File, ino sys.Inode) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[ino]--; b.open[ino] > 0 {
		return
	}
	delete(b.open, ino)
	if b.removed[ino] {
		delete(b.removed, ino)
		var size int64
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		b.free(size + scratchEntryBytes)
	}
}

// remove runs op, which removes name from root or replaces it (a rename
// onto it from from, unless from is empty), and frees the entry it
// removed: a directory at once, a regular file once no open file holds
// it.
func (b *budget) remove(root *os.Root, name, from string, op func() esys.Errno) esys.Errno {
	b.mu.Lock()
	defer b.mu.Unlock()
	old, err := root.Lstat(name)
	if err != nil {
		return op()
	}
	if from != "" {
		if src, err := root.Lstat(from); err == nil && os.SameFile(src, old) {
			return op()
		}
	}
	if e := op(); e != 0 {
		return e
	}
	switch ino := inode(old); {
	case !old.Mode().IsRegular():
		b.free(scratchEntryBytes)
	case b.open[ino] > 0:
		b.removed[ino] = true
	default:
		b.free(old.Size() + scratchEntryBytes)
	}
	return 0
}

// Write writes at the file's offset, or at its end when it was opened to
// append, within its scratch budget.
func (f *rootFile) Write(buf []byte) (n int, e esys.Errno) {
	if f.budget == nil || len(buf) == 0 {
		return f.File.Write(buf)
	}
	e = f.budget.grow(f.op.last, func(size int64) (int64, error) {
		if f.op.flag&os.O_APPEND != 0 {
			return size + int64(len(buf)), nil
		}
		off, err := f.op.last.Seek(0, io.SeekCurrent)
		return off + int64(len(buf)), err
	}, func() (e esys.Errno) {
		n, e = f.File.Write(buf)
		return e
	})
	return n, e
}

// Pwrite writes at off within the file's scratch budget.
func (f *rootFile) Pwrite(buf []byte, off int64) (n int, e esys.Errno) {
	if f.budget == nil || len(buf) == 0 {
		return f.File.Pwrite(buf, off)
	}
	e = f.budget.grow(f.op.last, func(int64) (int64, error) {
		return off + int64(len(buf)), nil
	}, func() (e esys.Errno) {
		n, e = f.File.Pwrite(buf, off)
		return e
	})
	return n, e
}

// Close closes the file, gives a removed file's bytes back to its
// scratch budget and counts it closed.
func (f *rootFile) Close() esys.Errno {
	if b := f.budget; b != nil {
		f.budget = nil
		b.closing(f.op.last, f.ino)
	}
	if o := f.files; o != nil {
		f.files = nil
		o.put()
	}
	return f.File.Close()
}
