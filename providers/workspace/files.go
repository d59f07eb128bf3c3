package workspace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/providers/internal/fit"
)

// A list answers at most maxListEntries entries, and at most maxListBytes
// of JSON (less when the answer bound is lower: fit.ListRoom): long names,
// which JSON may write six bytes for each of theirs ("\u003c" for '<',
// "\ufffd" for a byte that is not UTF-8), would otherwise make an answer
// larger than Brain takes.
const (
	maxListEntries = 10_000
	maxListBytes   = fit.MaxListBytes
)

func runRead(k *call) (any, error) {
	var in toolset.ReadInput
	r, p, fi, err := k.open(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if fi.IsDir() {
		return nil, invalidInput("%s is a directory; use the list tool", in.Path)
	}
	f, fi, err := openRegular(r, p, in.Path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if in.Offset >= fi.Size() {
		// Nothing to read; an offset near the largest one would make the
		// system refuse the read as reaching past any possible file.
		return toolset.NewReadOutput(nil, fi.Size(), false), nil
	}
	// JSON takes at least a byte for each of the content's: no more than
	// the answer's room is read.
	room := fit.Room(k.b.p.opts.MaxAnswerBytes)
	limit := int(min(in.Limited(int64(k.outputLimit())), int64(room)))
	buf := make([]byte, min(int64(limit), fi.Size()-in.Offset+1))
	n, err := f.ReadAt(buf, in.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fsError(in.Path, err)
	}
	data := buf[:n]
	truncated := in.Offset+int64(n) < fi.Size()
	if len(data) > limit {
		data, truncated = data[:limit], true
	}
	if truncated {
		data = toolset.TrimCutRune(data)
	}
	return fit.Read(data, fi.Size(), truncated, room), nil
}

func runWrite(k *call) (any, error) {
	var in toolset.WriteInput
	if err := toolset.Decode(k.x.Input, &in); err != nil {
		return nil, err
	}
	p, err := toolset.Clean(in.Path)
	if err != nil {
		return nil, err
	}
	if p == "." {
		return nil, invalidInput("input.path: names the workspace itself")
	}
	data, err := in.Data()
	if err != nil {
		return nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := k.sp.grow.lockContext(k.ctx); err != nil {
		return nil, stopped(k.ctx, in.Path)
	}
	defer k.sp.grow.Unlock()
	grow, files := int64(len(data)), 1
	if fi, err := r.Stat(p); err == nil {
		if fi.IsDir() {
			return nil, invalidInput("%s is a directory", in.Path)
		}
		if !fi.Mode().IsRegular() {
			return nil, notRegular(in.Path, fi.Mode())
		}
		files = 0
		if !in.Append {
			grow -= fi.Size()
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fsError(in.Path, err)
	}
	missing, err := missingDirs(k.ctx, r, filepath.Dir(p), in.Path)
	if err != nil {
		return nil, err
	}
	files += len(missing)
	if err := k.checkLimits(grow, files); err != nil {
		return nil, err
	}
	if err := writeFile(k.ctx, r, p, in.Path, data, in.Append, missing); err != nil {
		return nil, err
	}
	return toolset.WriteOutput{Bytes: len(data)}, nil
}

// open decodes a file tool's input into in, cleans the path it names (at
// *path), opens the workspace and stats the file; the caller closes the
// root.
func (k *call) open(in any, path *string) (*os.Root, string, fs.FileInfo, error) {
	if err := toolset.Decode(k.x.Input, in); err != nil {
		return nil, "", nil, err
	}
	p, err := toolset.Clean(*path)
	if err != nil {
		return nil, "", nil, err
	}
	r, err := k.root()
	if err != nil {
		return nil, "", nil, err
	}
	fi, err := r.Stat(p)
	if err != nil {
		r.Close()
		return nil, "", nil, fsError(*path, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		r.Close()
		return nil, "", nil, notRegular(*path, fi.Mode())
	}
	return r, p, fi, nil
}

// notRegular refuses a tool on a FIFO, socket, device or other special file:
// opening one can block forever or act on something outside the workspace.
func notRegular(path string, mode fs.FileMode) error {
	return invalidInput("%s is not a regular file or directory (%s)", path, kindOf(mode)).
		WithDetails(map[string]string{"path": envapi.Truncate(path), "type": kindOf(mode)})
}

func kindOf(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "char_device"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeDir != 0:
		return "dir"
	case t == 0:
		return "file"
	}
	return "other"
}

// openRegular opens p inside r (named name in failures) without ever
// blocking in open: O_NONBLOCK makes a FIFO without a peer answer at once,
// and the opened file is refused unless it is a regular file, so a file
// swapped for a FIFO after a Stat is refused too. It returns the file and
// its own Stat.
func openRegular(r *os.Root, p, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := r.OpenFile(p, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) { // a FIFO opened for writing with no reader
			return nil, nil, notRegular(name, fs.ModeNamedPipe)
		}
		return nil, nil, fsError(name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError(name, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(name, fi.Mode())
	}
	return f, fi, nil
}

// missingDirs lists, deepest first, the directories a write creates to
// make dir inside r: dir and those of its parents that do not exist. The
// parents of one missing are missing too, so the first missing is found
// by bisection, in a number of lookups logarithmic in dir's depth. Each
// directory listed is a prefix of dir, sharing its bytes: a path
// thousands of directories deep lists them in memory linear in its
// length, not in the square of its depth. It stops, failing (name in the
// failure), once ctx ends.
func missingDirs(ctx context.Context, r *os.Root, dir, name string) ([]string, error) {
	if dir == "." {
		return nil, nil
	}
	dir = filepath.Clean(dir)
	// ends[n-1] is where the first n names of dir end.
	var ends []int
	for i := 0; i < len(dir); i++ {
		if dir[i] == filepath.Separator {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(dir))
	prefix := func(n int) string { return dir[:ends[n-1]] }
	missing := func(n int) (bool, error) {
		if err := stopped(ctx, name); err != nil {
			return false, err
		}
		_, err := r.Stat(prefix(n))
		return errors.Is(err, fs.ErrNotExist), nil
	}
	// The first n names name a directory there for n <= there, and one
	// missing for n >= gone.
	there, gone := 0, len(ends)
	if m, err := missing(gone); err != nil || !m {
		return nil, err
	}
	for gone-there > 1 {
		mid := (there + gone) / 2
		m, err := missing(mid)
		if err != nil {
			return nil, err
		}
		if m {
			gone = mid
		} else {
			there = mid
		}
	}
	var dirs []string
	for n := len(ends); n >= gone; n-- {
		dirs = append(dirs, prefix(n))
	}
	return dirs, nil
}

func runList(k *call) (any, error) {
	var in toolset.ListInput
	r, p, fi, err := k.open(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !fi.IsDir() {
		return nil, invalidInput("%s is not a directory", in.Path)
	}
	entries := []toolset.Entry{}
	truncated := false
	answer, bound := fit.EmptyList, fit.ListRoom(k.b.p.opts.MaxAnswerBytes)
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == p {
				return err
			}
			// A subdirectory that cannot be read, or that went away
			// meanwhile, is listed without its contents.
			return nil
		}
		if path == p {
			return nil
		}
		if len(entries) == maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		var size int64
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
		}
		e := toolset.Entry{Path: filepath.ToSlash(path), Type: toolset.EntryType(d.Type()), Size: size}
		n := fit.Entry(e)
		if answer+n > bound {
			truncated = true
			return fs.SkipAll
		}
		answer += n
		entries = append(entries, e)
		if d.IsDir() && !in.Recursive {
			return fs.SkipDir
		}
		return nil
	}
	// Of a directory it reads, the list keeps only the entries it may
	// still answer, and the one after them that tells it is truncated.
	keep := func() int { return maxListEntries - len(entries) + 1 }
	if err := walkRoot(k.ctx, r, filepath.ToSlash(p), keep, walk); err != nil {
		if serr := stopped(k.ctx, in.Path); serr != nil {
			return nil, serr
		}
		return nil, fsError(in.Path, err)
	}
	return toolset.ListOutput{Entries: entries, Truncated: truncated}, nil
}

func runEdit(k *call) (any, error) {
	var in toolset.EditInput
	r, p, fi, err := k.open(&in, &in.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := k.sp.grow.lockContext(k.ctx); err != nil {
		return nil, stopped(k.ctx, in.Path)
	}
	defer k.sp.grow.Unlock()
	if !fi.Mode().IsRegular() {
		return nil, invalidInput("%s is not a regular file", in.Path)
	}
	// The file is held in memory, twice with its edited copy: the
	// operator's output limit bounds it, as it bounds what a read holds.
	limit := int64(k.b.p.opts.OutputLimit)
	tooLarge := func() error {
		return envsdk.Failf(envapi.CodeOutputLimit, "%s is larger than the %d bytes an edit works on; change it with a command", in.Path, limit).
			WithDetails(map[string]any{"path": envapi.Truncate(in.Path), "max_bytes": limit})
	}
	if fi.Size() > limit {
		return nil, tooLarge()
	}
	f, _, err := openRegular(r, p, in.Path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	f.Close()
	if err != nil {
		return nil, fsError(in.Path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge() // it grew meanwhile
	}
	edited, err := in.Apply(data)
	if err != nil {
		return nil, err
	}
	if err := k.checkLimits(int64(len(edited)-len(data)), 0); err != nil {
		return nil, err
	}
	if err := writeFile(k.ctx, r, p, in.Path, edited, false, nil); err != nil {
		return nil, err
	}
	return toolset.EditOutput{Replacements: 1}, nil
}
