package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// repairFromLogs writes the frames of session id that the live commit log
// files hold into its segments again, where a segment holds the entry's
// whole range with other bytes, and answers how many entries it wrote.
//
// A page whose writeback failed is clean: the kernel may drop it, and a
// later read answers what the device holds rather than the acknowledged
// frames. Until a sync point has made the segments durable and retired
// the log files, those files hold every such frame, so a session found
// damaged while they live is first repaired from them; damage they do not
// cover stays damage.
//
// It runs beside the writer: only for a session with no append queued
// (s.mu held, s.inflight 0, or unloaded after a failed round, whose writes
// and cuts are done), so the only concurrent writes to its segments are a
// sync point's rewrites of the same bytes. Log files retired meanwhile are
// skipped: their frames are durable.
func (fs *FileStore) repairFromLogs(id string) (int, error) {
	segs := segmentFiles{}
	defer segs.close()
	jdir := filepath.Join(fs.dir, id, "journal")
	repaired := 0
	err := fs.liveEntries(func(e *logEntry) error {
		if e.id != id {
			return nil
		}
		path := filepath.Join(jdir, segmentName(e.segFirst))
		f, err := segs.holding(path, e)
		if f == nil || err != nil {
			return err
		}
		have := make([]byte, len(e.frames))
		if _, err := f.ReadAt(have, e.off); err != nil {
			return fmt.Errorf("journal: repair %s: %w", path, err)
		}
		if bytes.Equal(have, e.frames) {
			return nil
		}
		if _, err := f.WriteAt(e.frames, e.off); err != nil {
			return fmt.Errorf("journal: repair %s: %w", path, err)
		}
		repaired++
		return nil
	})
	if repaired > 0 {
		// The next sync point writes every logged frame again, flushes
		// and reads them back before it retires a log file.
		fs.repaired.Store(true)
	}
	return repaired, err
}

// rewriteFromLogs writes the frames of every live log file into their
// segments again, at their offsets, and marks those segments and their
// directories dirty: after a failed flush the kernel may have dropped the
// dirty pages (a later flush then succeeds without writing them), so the
// segments are made durable from the log, which holds every acknowledged
// frame since the last sync point. A segment that is gone (its session
// deleted) or shorter than an entry's end is left alone: the session's
// reads and appends see it as it is.
func (fs *FileStore) rewriteFromLogs() ([]rewrite, error) {
	segs := segmentFiles{}
	defer segs.close()
	var out []rewrite
	err := fs.liveEntries(func(e *logEntry) error {
		sdir := filepath.Join(fs.dir, e.id)
		jdir := filepath.Join(sdir, "journal")
		seg := filepath.Join(jdir, segmentName(e.segFirst))
		f, err := segs.holding(seg, e)
		if f == nil || err != nil {
			return err
		}
		if _, err := f.WriteAt(e.frames, e.off); err != nil {
			return fmt.Errorf("journal: rewrite %s: %w", seg, err)
		}
		// fsync, not fdatasync: the inode (block map, size) may have
		// been lost with the pages, and the write dirtied its times.
		fs.dirty[seg] = true
		fs.dirty[jdir] = true
		fs.dirty[sdir] = true
		fs.dirty[fs.dir] = true
		out = append(out, rewrite{path: seg, off: e.off, frames: e.frames})
		return nil
	})
	return out, err
}

// liveEntries calls fn with every entry of the live log files (those no
// sync point retired), oldest first. A file ends at its first entry that
// does not decode (a write cut short: never acknowledged); a file retired
// and removed meanwhile is skipped (its frames are durable).
func (fs *FileStore) liveEntries(fn func(e *logEntry) error) error {
	ldir := fs.logDir()
	entries, err := os.ReadDir(ldir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: read %s: %w", ldir, err)
	}
	first, err := readSyncPoint(ldir)
	if err != nil {
		return err
	}
	nums := logNums(entries, first)
	for _, n := range nums {
		path := filepath.Join(ldir, logName(n))
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("journal: read %s: %w", path, err)
		}
		for off := 0; off < len(b); {
			e, k, err := decodeLogEntry(b[off:], fs.opts.MaxRecordBytes)
			if err != nil {
				break
			}
			off += k
			if err := fn(&e); err != nil {
				return err
			}
		}
	}
	return nil
}

// segmentFiles keeps the segment files a walk over log entries opened.
type segmentFiles map[string]*os.File

// holding answers the segment file at path, opened for reading and
// writing, when it exists and holds e's whole range; else nil. A segment
// under a session or journal directory that is not a directory (a
// symbolic link put in its place), or that is itself a link, is never
// opened: the session is refused as damaged when it is opened, and
// nothing is written through the link.
func (sf segmentFiles) holding(path string, e *logEntry) (*os.File, error) {
	f, seen := sf[path]
	if !seen {
		jdir := filepath.Dir(path)
		var err error
		if !realDir(filepath.Dir(jdir)) || !realDir(jdir) {
			err = os.ErrNotExist
		} else {
			f, err = os.OpenFile(path, os.O_RDWR|oNoFollow|oNonBlock, 0)
		}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			f = nil
		} else if err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", path, err)
		}
		sf[path] = f
	}
	if f == nil {
		return nil, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("journal: stat %s: %w", path, err)
	}
	if fi.Size() < e.off+int64(len(e.frames)) {
		return nil, nil // cut back after a failed round: never acknowledged
	}
	return f, nil
}

// realDir reports whether dir is a directory, not a symbolic link to one.
func realDir(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir()
}

func (sf segmentFiles) close() {
	for _, f := range sf {
		if f != nil {
			f.Close()
		}
	}
}

// rewrite is a run of frames rewriteFromLogs wrote into a segment.
type rewrite struct {
	path   string
	off    int64
	frames []byte
}

// verifyRewrites checks that the device holds every rewritten run. Where
// the file system cannot read past its cache (no O_DIRECT) the flush's
// success is trusted.
func verifyRewrites(runs []rewrite) error {
	for _, r := range runs {
		have, err := readDevice(r.path, r.off, len(r.frames))
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) {
			return nil
		}
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("journal: read back %s: %w", r.path, err)
		}
		if !bytes.Equal(have, r.frames) {
			return fmt.Errorf("journal: %s at %d: %w: the device does not hold the flushed frames", r.path, r.off, syscall.EIO)
		}
	}
	return nil
}
