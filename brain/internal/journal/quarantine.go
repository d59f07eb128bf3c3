package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// quarantineDir holds, for each session whose directory replay could not
// write into (a symbolic link, or something else that is not a
// directory, stands in its place), the commit log entries of that
// session that replay found: sessions/.quarantine/{id}/{n}.log holds the
// session's entries of log file n, byte for byte and in order, in the
// commit log's format. It is never a session id, since ids cannot start
// with '.'.
const quarantineDir = ".quarantine"

// quarantinePath answers the quarantine directory of session id.
func (fs *FileStore) quarantinePath(id string) string {
	return filepath.Join(fs.dir, quarantineDir, id)
}

// quarantined answers the damage of a session whose records are kept in
// quarantine, or nil.
func (fs *FileStore) quarantined(id string) *DamagedError {
	v, ok := fs.quarantine.Load(id)
	if !ok {
		return nil
	}
	return v.(*DamagedError)
}

// holdQuarantined marks session id damaged, with its records kept in its
// quarantine directory, for why (the reason its directory cannot be
// written).
func (fs *FileStore) holdQuarantined(id, why string) {
	reason := fmt.Sprintf("%s; records of the session acknowledged before the store stopped that its journal lacks are kept in %s (commit log entries), "+
		"which the first open after the session's directory is back in its place writes into it (deleting the session discards them)",
		why, fs.quarantinePath(id))
	fs.quarantine.Store(id, &DamagedError{Session: id, File: filepath.Join(fs.dir, id), Reason: reason})
}

// writeQuarantine makes data, the entries of session id found in log file
// n, durable as the quarantine file of that log file, replacing what an
// earlier replay of the same file wrote there. Nothing is written through
// a symbolic link.
func (fs *FileStore) writeQuarantine(id string, n uint64, data []byte) error {
	root := filepath.Join(fs.dir, quarantineDir)
	qdir := fs.quarantinePath(id)
	for _, d := range []string{root, qdir} {
		err := os.Mkdir(d, 0o700)
		if err == nil {
			if err := syncDir(filepath.Dir(d)); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("journal: quarantine %s: %w", d, err)
		}
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("journal: quarantine %s: not a directory: %w", d, errNotRegular)
		}
	}
	return writeFileAtomic(filepath.Join(qdir, logName(n)), data)
}

// restoreQuarantine runs at open, before replay: the records kept for a
// session whose directory is a directory again are written into its
// journal with the rules of replay (without Options.OnReplay, which had
// them when they were kept). It answers the sessions restored, whose
// quarantine directories are removed once their segments are durable.
// A session whose directory is still not one (or missing), or whose
// records could not be written, keeps them and opens as damaged.
func (fs *FileStore) restoreQuarantine() ([]string, error) {
	root := filepath.Join(fs.dir, quarantineDir)
	fi, err := os.Lstat(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err == nil && !fi.IsDir() {
		// Nothing is read or removed through a link.
		err = fmt.Errorf("%s: not a directory: %w", root, errNotRegular)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: open quarantine: %w", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("journal: open quarantine: %w", err)
	}
	var restored []string
	for _, e := range entries {
		id := e.Name()
		if checkSessionID(id) != nil || !e.IsDir() {
			continue
		}
		sdir := filepath.Join(fs.dir, id)
		fi, err := os.Lstat(sdir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fs.holdQuarantined(id, "the session directory is missing")
			continue
		case err != nil:
			fs.holdQuarantined(id, fmt.Sprintf("the session directory cannot be read (%v)", err))
			continue
		case !fi.IsDir():
			fs.holdQuarantined(id, linkedReason(fi.Mode()))
			continue
		}
		if err := fs.restoreSession(filepath.Join(root, id)); err != nil {
			fs.holdQuarantined(id, fmt.Sprintf("writing them into the journal failed (%v)", err))
			continue
		}
		restored = append(restored, id)
	}
	return restored, nil
}

// restoreSession replays the quarantine files in qdir in number order.
func (fs *FileStore) restoreSession(qdir string) error {
	entries, err := os.ReadDir(qdir)
	if err != nil {
		return err
	}
	nums := logNums(entries, 0)
	files := make(map[string]*replayFile)
	defer func() {
		for _, rf := range files {
			rf.f.Close()
		}
	}()
	for _, n := range nums {
		if err := fs.replayFile(filepath.Join(qdir, logName(n)), files, nil); err != nil {
			return err
		}
	}
	return nil
}

// dropQuarantine removes the quarantine directory of session id and makes
// that durable; once it is gone the session is no longer held damaged.
func (fs *FileStore) dropQuarantine(id string) error {
	qdir := fs.quarantinePath(id)
	if _, err := os.Lstat(qdir); errors.Is(err, os.ErrNotExist) {
		fs.quarantine.Delete(id)
		return nil
	}
	if err := os.RemoveAll(qdir); err != nil {
		return fmt.Errorf("journal: remove %s: %w", qdir, err)
	}
	if err := syncDir(filepath.Dir(qdir)); err != nil {
		return err
	}
	fs.quarantine.Delete(id)
	return nil
}

// linkedReason explains a session directory of mode m, not a directory.
func linkedReason(m os.FileMode) string {
	if m&os.ModeSymlink != 0 {
		return "the session directory is a symbolic link, which the journal does not follow; move the directory it names into its place"
	}
	return fmt.Sprintf("the session directory is not a directory (mode %v)", m)
}
