package journal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	ldir := fs.logDir()
	entries, err := os.ReadDir(ldir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("journal: repair %s: %w", id, err)
	}
	first, err := readSyncPoint(ldir)
	if err != nil {
		return 0, fmt.Errorf("journal: repair %s: %w", id, err)
	}
	var nums []uint64
	for _, e := range entries {
		if n, ok := parseLogName(e.Name()); ok && n >= first && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	files := make(map[string]*os.File)
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	jdir := filepath.Join(fs.dir, id, "journal")
	repaired := 0
	for _, n := range nums {
		b, err := os.ReadFile(filepath.Join(ldir, logName(n)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return repaired, fmt.Errorf("journal: repair %s: %w", id, err)
		}
		for off := 0; off < len(b); {
			e, k, err := decodeLogEntry(b[off:], fs.opts.MaxRecordBytes)
			if err != nil {
				break // a write cut short: never acknowledged
			}
			off += k
			if e.id != id {
				continue
			}
			path := filepath.Join(jdir, segmentName(e.segFirst))
			f, seen := files[path]
			if !seen {
				f, err = os.OpenFile(path, os.O_RDWR, 0)
				if errors.Is(err, os.ErrNotExist) {
					f = nil
				} else if err != nil {
					return repaired, fmt.Errorf("journal: repair %s: %w", path, err)
				}
				files[path] = f
			}
			if f == nil {
				continue
			}
			fi, err := f.Stat()
			if err != nil {
				return repaired, fmt.Errorf("journal: repair %s: %w", path, err)
			}
			if fi.Size() < e.off+int64(len(e.frames)) {
				continue // cut back after a failed round: never acknowledged
			}
			have := make([]byte, len(e.frames))
			if _, err := f.ReadAt(have, e.off); err != nil {
				return repaired, fmt.Errorf("journal: repair %s: %w", path, err)
			}
			if bytes.Equal(have, e.frames) {
				continue
			}
			if _, err := f.WriteAt(e.frames, e.off); err != nil {
				return repaired, fmt.Errorf("journal: repair %s: %w", path, err)
			}
			repaired++
		}
	}
	if repaired > 0 {
		// The next sync point writes every logged frame again, flushes
		// and reads them back before it retires a log file.
		fs.repaired.Store(true)
	}
	return repaired, nil
}
