package journal

import (
	"bytes"
	"fmt"
	"path/filepath"
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
