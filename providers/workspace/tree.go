package workspace

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// maxOpenDirs is how many directories below its start a walk holds open
// at most. A walk deeper than that closes the shallowest it holds as it
// descends, and opens each again through ".." of its child, checking that
// it is the same directory, when it comes back up: a tree deeper than the
// process's limit on open files is walked whole, each directory opened at
// most twice, whatever its depth.
const maxOpenDirs = 64

// readBatch is how many entries a walk reads between two looks at its
// context.
const readBatch = 1024

// visitFunc is called by walkTree for each entry, as fs.WalkDirFunc is by
// fs.WalkDir (fs.SkipDir and fs.SkipAll included): for a directory
// before it is read, and again with the error when it cannot be. dir is
// the directory holding the entry, open, valid during the call only (nil
// for the start); at names the entry.
type visitFunc func(dir *os.File, at entryPath, d fs.DirEntry, err error) error

// leaveFunc is called by walkTree after a directory's entries, with the
// directory holding it open as dir (nil for the start), unless reading
// it failed.
type leaveFunc func(dir *os.File, at entryPath)

// treeFrame is a directory the walk is in.
type treeFrame struct {
	name     string   // in its parent; the start's path for the start
	f        *os.File // nil while closed to bound the directories held open
	dev, ino uint64
	entries  []fs.DirEntry
	next     int // the next entry to visit
}

// treeWalk is one walk of a tree, the directories it is in open as far as
// maxOpenDirs allows. It reaches every directory by a single name
// (openat(2), O_NOFOLLOW) from one held open, so that its cost is linear
// in the tree's size whatever its depth, and it never follows a symbolic
// link: it stays in the tree it starts in.
type treeWalk struct {
	ctx   context.Context
	keep  func() int // nil: every entry of a directory is kept
	visit visitFunc
	leave leaveFunc
	stack []*treeFrame
}

// entryPath names an entry of a walk. The path of an entry thousands of
// directories deep is long: it is built only when asked for.
type entryPath struct {
	w    *treeWalk // nil: the start
	name string
}

// String is the entry's path, slash-separated, from the walk's start.
func (a entryPath) String() string {
	if a.w == nil {
		return a.name
	}
	n := len(a.name)
	for _, fr := range a.w.stack {
		n += len(fr.name) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for i, fr := range a.w.stack {
		if i == 0 && fr.name == "." {
			continue
		}
		b.WriteString(fr.name)
		b.WriteByte('/')
	}
	b.WriteString(a.name)
	return b.String()
}

// walkTree walks the tree at start, whose entry is d, fn-style: visit is
// called for start, then, if it is a directory, open opens it and its
// entries are walked in lexical order; leave, if not nil, is called after
// each directory's entries. The walk stops once ctx ends, failing with
// its cause, between two entries and between two parts of a large
// directory's reading. fs.SkipAll from visit stops it without failure.
func walkTree(ctx context.Context, start string, d fs.DirEntry, open func() (*os.File, error), visit visitFunc, leave leaveFunc) error {
	return walkTreeKeeping(ctx, start, d, open, nil, visit, leave)
}

// walkTreeKeeping is walkTree for a walk that visits a bounded number of
// entries: keep, called as each directory is about to be read, answers
// how many of its entries the walk may still visit at most, and only the
// first that many by name are kept of it (the others are read, and
// dropped as they come), so that a directory of millions of entries
// costs memory in proportion to what the walk visits, not to its size.
// A nil keep keeps them all.
func walkTreeKeeping(ctx context.Context, start string, d fs.DirEntry, open func() (*os.File, error), keep func() int, visit visitFunc, leave leaveFunc) error {
	w := &treeWalk{ctx: ctx, keep: keep, visit: visit, leave: leave}
	defer w.closeAll()
	err := w.start(start, d, open)
	if err == nil {
		err = w.run()
	}
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (w *treeWalk) start(start string, d fs.DirEntry, open func() (*os.File, error)) error {
	if w.ctx.Err() != nil {
		return context.Cause(w.ctx)
	}
	at := entryPath{name: start}
	if err := w.visit(nil, at, d, nil); err != nil || !d.IsDir() {
		return err
	}
	f, err := open()
	if err != nil {
		return w.failed(nil, at, d, err)
	}
	return w.push(nil, at, d, f)
}

func (w *treeWalk) run() error {
	for len(w.stack) > 0 {
		if w.ctx.Err() != nil {
			return context.Cause(w.ctx)
		}
		top := w.stack[len(w.stack)-1]
		if top.next == len(top.entries) {
			w.pop()
			continue
		}
		e := top.entries[top.next]
		top.next++
		at := entryPath{w: w, name: e.Name()}
		if err := w.visit(top.f, at, e, nil); err != nil {
			if !errors.Is(err, fs.SkipDir) {
				return err
			}
			if !e.IsDir() {
				top.next = len(top.entries) // the rest of its directory
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		f, err := openDirAt(top.f, e.Name())
		if err != nil {
			err = &fs.PathError{Op: "openat", Path: at.String(), Err: err}
			if err := w.failed(top.f, at, e, err); err != nil {
				return err
			}
			continue
		}
		if err := w.push(top.f, at, e, f); err != nil {
			return err
		}
	}
	return nil
}

// failed reports to visit that the directory at could not be read.
func (w *treeWalk) failed(dir *os.File, at entryPath, d fs.DirEntry, err error) error {
	err = w.visit(dir, at, d, err)
	if errors.Is(err, fs.SkipDir) {
		return nil
	}
	return err
}

// push reads the directory at, open as f (which it takes), and enters it.
func (w *treeWalk) push(dir *os.File, at entryPath, d fs.DirEntry, f *os.File) error {
	fr := &treeFrame{name: at.name, f: f}
	var st unix.Stat_t
	err := statFile(f, &st)
	if err == nil {
		fr.dev, fr.ino = uint64(st.Dev), uint64(st.Ino)
		limit := -1
		if w.keep != nil {
			limit = max(w.keep(), 0)
		}
		fr.entries, err = readEntries(w.ctx, fr, limit)
	}
	if w.ctx.Err() != nil {
		f.Close()
		return context.Cause(w.ctx)
	}
	if err != nil {
		f.Close()
		return w.failed(dir, at, d, err)
	}
	w.stack = append(w.stack, fr)
	if i := len(w.stack) - 1 - maxOpenDirs; i >= 1 && w.stack[i].f != nil {
		w.stack[i].f.Close()
		w.stack[i].f = nil
	}
	return nil
}

// pop leaves the directory on top, its parent open again if the walk
// closed it. A parent that is no longer where it was (moved or removed
// meanwhile) is left without its other entries.
func (w *treeWalk) pop() {
	n := len(w.stack) - 1
	fr := w.stack[n]
	if n == 0 {
		fr.f.Close()
		fr.f = nil
		if w.leave != nil {
			w.leave(nil, entryPath{name: fr.name})
		}
		w.stack = w.stack[:0]
		return
	}
	parent := w.stack[n-1]
	if parent.f == nil {
		parent.f = w.reopen(n-1, fr.f)
	}
	fr.f.Close()
	fr.f = nil
	w.stack = w.stack[:n]
	if parent.f == nil {
		parent.next = len(parent.entries)
		return
	}
	if w.leave != nil {
		w.leave(parent.f, entryPath{w: w, name: fr.name})
	}
}

// reopen opens again the directory of frame i (i >= 1), closed by the
// walk, through ".." of its child, open as child; through the names from
// the start where that leads elsewhere (the child was moved). It answers
// nil where neither leads to the directory the walk was in.
func (w *treeWalk) reopen(i int, child *os.File) *os.File {
	fr := w.stack[i]
	if f, err := openDirAt(child, ".."); err == nil {
		if w.same(f, fr) {
			return f
		}
		f.Close()
	}
	var f *os.File
	dir := w.stack[0].f
	for _, step := range w.stack[1 : i+1] {
		next, err := openDirAt(dir, step.name)
		if f != nil {
			f.Close()
		}
		if err != nil {
			return nil
		}
		f, dir = next, next
	}
	if w.same(f, fr) {
		return f
	}
	f.Close()
	return nil
}

func (w *treeWalk) same(f *os.File, fr *treeFrame) bool {
	var st unix.Stat_t
	return statFile(f, &st) == nil && uint64(st.Dev) == fr.dev && uint64(st.Ino) == fr.ino
}

func (w *treeWalk) closeAll() {
	for _, fr := range w.stack {
		if fr.f != nil {
			fr.f.Close()
			fr.f = nil
		}
	}
	w.stack = nil
}

// openDirAt opens the directory name in dir, never following a symbolic
// link.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

func statFile(f *os.File, st *unix.Stat_t) error {
	return unix.Fstat(int(f.Fd()), st)
}

// readEntries reads the directory of fr, sorted by name, keeping only
// the first keep entries by name (all of them when keep is negative):
// while it reads, it holds at most keep entries and the batch it reads.
// It stops reading once ctx ends.
func readEntries(ctx context.Context, fr *treeFrame, keep int) ([]fs.DirEntry, error) {
	var held firstNames
	held.keep = keep
	var err error
	for ctx.Err() == nil {
		var batch []fs.DirEntry
		batch, err = fr.f.ReadDir(readBatch)
		for _, e := range batch {
			held.add(treeEntry{name: e.Name(), typ: e.Type(), fr: fr})
		}
		if entriesHeld != nil {
			entriesHeld(fr.name, len(held.entries))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			break
		}
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	entries := held.entries
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// entriesHeld, when not nil, is called by readEntries after each batch
// it reads with the name of the directory (in its parent) and the number
// of its entries held.
var entriesHeld func(name string, n int)

// firstNames holds the first keep entries by name of those added (all
// of them when keep is negative); bounded, it is a max-heap by name, so
// that an entry after all those held is dropped at once and one before
// the last of them takes its place.
type firstNames struct {
	keep    int
	entries []fs.DirEntry
}

func (h *firstNames) add(e fs.DirEntry) {
	switch {
	case h.keep < 0:
		h.entries = append(h.entries, e)
	case len(h.entries) < h.keep:
		heap.Push(h, e)
	case h.keep > 0 && e.Name() < h.entries[0].Name():
		h.entries[0] = e
		heap.Fix(h, 0)
	}
}

func (h *firstNames) Len() int           { return len(h.entries) }
func (h *firstNames) Less(i, j int) bool { return h.entries[i].Name() > h.entries[j].Name() }
func (h *firstNames) Swap(i, j int)      { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *firstNames) Push(x any)         { h.entries = append(h.entries, x.(fs.DirEntry)) }

// Pop is never called by firstNames itself; heap.Interface asks for it.
func (h *firstNames) Pop() any {
	n := len(h.entries) - 1
	e := h.entries[n]
	h.entries[n] = nil
	h.entries = h.entries[:n]
	return e
}

// treeEntry is an entry of a directory a walk read. Its Info is the
// lstat of it through its directory, open while the entry is visited.
type treeEntry struct {
	name string
	typ  fs.FileMode
	fr   *treeFrame
}

func (e treeEntry) Name() string      { return e.name }
func (e treeEntry) IsDir() bool       { return e.typ.IsDir() }
func (e treeEntry) Type() fs.FileMode { return e.typ }
func (e treeEntry) String() string    { return fs.FormatDirEntry(e) }

func (e treeEntry) Info() (fs.FileInfo, error) {
	if e.fr == nil || e.fr.f == nil {
		return nil, &fs.PathError{Op: "fstatat", Path: e.name, Err: fs.ErrClosed}
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(int(e.fr.f.Fd()), e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "fstatat", Path: e.name, Err: err}
		}
		return statInfo{name: e.name, st: st}, nil
	}
}

// statInfo is the fs.FileInfo of a stat; Sys is its *unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return int64(s.st.Size) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := uint32(s.st.Mode)
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
