package journal

import (
	"errors"
	"os"
	"path/filepath"
)

// A create cut short (the process killed after the first append made the
// session's directory and before its record was durable) leaves a
// directory that holds no record: nothing, an empty journal directory or
// an empty first segment. Such a session does not exist: the first open
// of the session removes the directory; Sessions does not list it, and
// opens it (see listing.go).

// forgetUnborn removes the directory of s when s holds no record and
// nothing of it is queued for the writer, so that what a create cut short
// left behind does not stay on disk. A directory that holds anything but
// empty segments stays. s.mu is held, so no append of s is admitted
// meanwhile; the next one makes the directory again. Best effort: a
// directory left behind is tried again when s is next opened.
func (fs *FileStore) forgetUnborn(s *session) {
	if s.state != stateReady || s.committedNext != 1 || s.inflight > 0 || s.whandle.Load() {
		return
	}
	// A checkpoint being written finishes first; the directory then
	// holds it and stays.
	s.ckMu.Lock()
	gone := removeUnborn(s.dir)
	s.ckMu.Unlock()
	if gone && len(s.segs) > 0 {
		// The writer opens the last segment it knows of: it is gone.
		s.resetIndex()
	}
}

// removeUnborn removes the directory of a session that holds no record,
// when it holds nothing but a journal directory of empty segments (or not
// even that), so that a create that failed on a full disk, or was cut
// short by a crash, leaves nothing behind. It reports whether the
// directory is gone. Best effort: what stays is an empty session, which
// opens as not found.
func removeUnborn(dir string) bool {
	top, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil || len(top) > 1 || (len(top) == 1 && top[0].Name() != "journal") {
		return false
	}
	jdir := filepath.Join(dir, "journal")
	segs, err := os.ReadDir(jdir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	for _, e := range segs {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
			return false
		}
	}
	for _, e := range segs {
		_ = os.Remove(filepath.Join(jdir, e.Name()))
	}
	_ = os.Remove(jdir)
	err = os.Remove(dir)
	return err == nil || errors.Is(err, os.ErrNotExist)
}
