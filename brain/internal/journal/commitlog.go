package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Commit log layout; doc.go ("Commit log") is the specification.
const (
	commitLogDir    = ".commitlog"
	logSuffix       = ".log"
	syncPointName   = "syncpoint"
	syncPointMagic  = "BRAINSP1"
	syncPointSize   = 8 + 4 + 8
	logEntryHeader  = 8  // entry length, checksum
	logEntryFixed   = 18 // type, id length, segment first, segment offset
	logEntryFrames  = 1
	logRunBytes     = 1 << 20 // frames of one entry, unless a single frame is larger
	maxSegmentBytes = 1 << 62
)

// ErrLogDamaged says the shared commit log holds a complete entry that
// does not check out; the store refuses to open.
var ErrLogDamaged = errors.New("journal: commit log is damaged")

// LogDamagedError says where the commit log is damaged.
type LogDamagedError struct {
	File   string
	Offset int64
	Reason string
}

func (e *LogDamagedError) Error() string {
	return fmt.Sprintf("journal: commit log damaged at %s offset %d: %s", e.File, e.Offset, e.Reason)
}

func (e *LogDamagedError) Unwrap() error { return ErrLogDamaged }

func logName(n uint64) string { return fmt.Sprintf("%020d%s", n, logSuffix) }

// parseLogName returns the number of a commit log file name.
func parseLogName(name string) (uint64, bool) {
	stem, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(stem) != segmentNameLen {
		return 0, false
	}
	for _, c := range stem {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(stem, 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	return n, true
}

// appendLogEntry appends one commit log entry carrying frames, which go
// to offset off of session id's segment named segFirst.
func appendLogEntry(dst []byte, id string, segFirst uint64, off int64, frames []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(logEntryFixed+len(id)+len(frames)))
	dst = binary.LittleEndian.AppendUint32(dst, 0) // checksum, filled below
	dst = append(dst, logEntryFrames, byte(len(id)))
	dst = binary.LittleEndian.AppendUint64(dst, segFirst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(off))
	dst = append(dst, id...)
	dst = append(dst, frames...)
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(dst[start+logEntryHeader:], castagnoli))
	return dst
}

// logEntry is a decoded commit log entry; frames aliases the input.
type logEntry struct {
	id       string
	segFirst uint64
	off      int64
	frames   []byte
	first    uint64 // sequence of the first frame
	count    int    // frames
}

var (
	errLogShort    = errors.New("journal: incomplete log entry")
	errLogChecksum = errors.New("journal: log entry checksum mismatch")
)

// maxLogEntry bounds an entry's length field: a run of frames is cut at
// logRunBytes unless a single frame is larger.
func maxLogEntry(maxPayload int) uint64 {
	return uint64(logEntryFixed+maxSessionIDBytes+logRunBytes+frameHeaderSize) + uint64(max(maxPayload, DefaultMaxRecordBytes))
}

// decodeLogEntry decodes the entry at the start of b and returns it with
// its size. errLogShort means b ends inside the entry; any other error is
// a complete entry that does not check out.
func decodeLogEntry(b []byte, maxPayload int) (logEntry, int, error) {
	var e logEntry
	if len(b) < logEntryHeader {
		return e, 0, errLogShort
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n > maxLogEntry(maxPayload) {
		return e, 0, fmt.Errorf("entry length %d exceeds the bound %d", n, maxLogEntry(maxPayload))
	}
	if n > uint64(len(b)-logEntryHeader) {
		return e, 0, errLogShort
	}
	body := b[logEntryHeader : logEntryHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return e, 0, errLogChecksum
	}
	if len(body) < logEntryFixed {
		return e, 0, fmt.Errorf("entry length %d is shorter than its %d-byte header", n, logEntryFixed)
	}
	if body[0] != logEntryFrames {
		return e, 0, fmt.Errorf("unknown entry type %d", body[0])
	}
	idLen := int(body[1])
	if logEntryFixed+idLen > len(body) {
		return e, 0, fmt.Errorf("session id length %d exceeds the entry", idLen)
	}
	e.segFirst = binary.LittleEndian.Uint64(body[2:])
	off := binary.LittleEndian.Uint64(body[10:])
	if e.segFirst == 0 || off > maxSegmentBytes {
		return e, 0, fmt.Errorf("bad segment %d or offset %d", e.segFirst, off)
	}
	e.off = int64(off)
	e.id = string(body[logEntryFixed : logEntryFixed+idLen])
	if err := checkSessionID(e.id); err != nil {
		return e, 0, err
	}
	e.frames = body[logEntryFixed+idLen:]
	if len(e.frames) == 0 {
		return e, 0, errors.New("entry carries no frame")
	}
	for p := e.frames; len(p) > 0; {
		seq, size, err := checkFrame(p, max(maxPayload, DefaultMaxRecordBytes))
		if err != nil {
			return e, 0, fmt.Errorf("frame %d of the entry: %w", e.count, err)
		}
		switch {
		case e.count == 0 && (seq < e.segFirst || (e.off == 0 && seq != e.segFirst)):
			return e, 0, fmt.Errorf("sequence %d does not fit segment %d at offset %d", seq, e.segFirst, e.off)
		case e.count == 0:
			e.first = seq
		case seq != e.first+uint64(e.count):
			return e, 0, fmt.Errorf("frame %d has sequence %d, want %d", e.count, seq, e.first+uint64(e.count))
		}
		e.count++
		p = p[size:]
	}
	return e, logEntryHeader + int(n), nil
}

// checkFrame checks one complete frame at the start of b without
// allocating and returns its sequence and size.
func checkFrame(b []byte, maxPayload int) (uint64, int, error) {
	if len(b) < frameHeaderSize {
		return 0, 0, errShortFrame
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n > uint64(maxPayload) {
		return 0, 0, fmt.Errorf("%w: %d bytes", errFrameSize, n)
	}
	if n > uint64(len(b)-frameHeaderSize) {
		return 0, 0, errShortFrame
	}
	p := b[frameHeaderSize : frameHeaderSize+int(n)]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return 0, 0, errChecksum
	}
	v, err := parsePayload(p)
	if err != nil {
		return 0, 0, err
	}
	return v.seq, frameHeaderSize + int(n), nil
}

func encodeSyncPoint(next uint64) []byte {
	b := make([]byte, 0, syncPointSize)
	b = append(b, syncPointMagic...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(binary.LittleEndian.AppendUint64(nil, next), castagnoli))
	return binary.LittleEndian.AppendUint64(b, next)
}

// readSyncPoint returns the first log number still needed (1 when there
// is no marker).
func readSyncPoint(ldir string) (uint64, error) {
	path := filepath.Join(ldir, syncPointName)
	b, err := readRegular(path, syncPointSize)
	if errors.Is(err, os.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("journal: read %s: %w", path, err)
	}
	if len(b) != syncPointSize || string(b[:8]) != syncPointMagic ||
		crc32.Checksum(b[12:], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, fmt.Errorf("journal: %s: %w", path,
			&LogDamagedError{File: path, Offset: 0, Reason: "malformed sync point marker"})
	}
	return max(binary.LittleEndian.Uint64(b[12:]), 1), nil
}

// logNums answers the numbers, from first on and in order, of the commit
// log files among entries (a directory's listing), skipping what is not
// a regular file.
func logNums(entries []os.DirEntry, first uint64) []uint64 {
	var nums []uint64
	for _, e := range entries {
		if n, ok := parseLogName(e.Name()); ok && n >= first && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums
}

func (fs *FileStore) logDir() string { return filepath.Join(fs.dir, commitLogDir) }

// createLog starts a new commit log file and makes its name durable.
func (fs *FileStore) createLog() error {
	ldir := fs.logDir()
	if !fs.logDirReady {
		if err := os.MkdirAll(ldir, 0o700); err != nil {
			return fmt.Errorf("journal: create %s: %w", ldir, err)
		}
		fs.syncs.Add(1)
		if err := syncDir(fs.dir); err != nil {
			return err
		}
		fs.logDirReady = true
	}
	for {
		path := filepath.Join(ldir, logName(fs.logNext))
		fs.logNext++
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("journal: create %s: %w", path, err)
		}
		fs.logsLive = true
		// The file's size and blocks become durable with the first
		// round's fdatasync; from then on a round's fdatasync writes its
		// bytes into blocks the file already has, with no size to update.
		preallocate(f, min(fs.opts.CommitLogBytes, maxLogPrealloc))
		fs.syncs.Add(1)
		if err := syncDir(ldir); err != nil {
			f.Close()
			return err
		}
		fs.log, fs.logSize = f, 0
		return nil
	}
}

// maxLogPrealloc bounds the space a new log file reserves.
const maxLogPrealloc = 16 << 20

// logWrite appends a group commit's entries to the commit log with one
// write at the end of what it holds (pwrite: the file may be longer,
// preallocated); the caller then makes them durable with one fdatasync.
func (fs *FileStore) logWrite(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if fs.log == nil {
		if err := fs.createLog(); err != nil {
			fs.needSyncPoint = true
			return err
		}
	}
	n, err := fs.log.WriteAt(buf, fs.logSize)
	if err != nil {
		return fs.logFailed(err)
	}
	fs.logSize += int64(n)
	return nil
}

// logFailed handles a failed write or fdatasync of the log: the file is
// cut back to fs.logSize, where the failed round began (best effort;
// replay cuts a torn tail anyway), and closed, the writer moves to a new
// log file, and the next group commit first takes a sync point so that
// the failed file is retired.
func (fs *FileStore) logFailed(err error) error {
	name := fs.log.Name()
	fs.log.Truncate(fs.logSize)
	fs.log.Close()
	fs.log = nil
	fs.needSyncPoint = true
	fs.suspect.Store(true)
	return fmt.Errorf("journal: commit log %s: %w", name, err)
}

// logCut takes a round's entries, written from offset start and flushed,
// back out of the log file after a segment write of the round failed
// with cause: their bytes are overwritten with zeros, which replay reads
// as the end of the log (as it reads the preallocated space after the
// last entry), and flushed, so that neither replay nor a rewrite from
// the log writes frames of appends that were not acknowledged. The file
// is not shortened: that would give back the blocks reserved for it on a
// disk that just filled. It answers cause, or, when the cut could not be
// made durable, the failure as logFailed answers it (the writer then
// moves to a new log file).
func (fs *FileStore) logCut(start int64, cause error) error {
	n := fs.logSize - start
	fs.logSize = start
	_, err := fs.log.WriteAt(make([]byte, n), start)
	if err == nil {
		fs.syncs.Add(1)
		err = fdatasync(fs.log)
	}
	if err != nil {
		return fs.logFailed(fmt.Errorf("%w; cutting the round from the log: %w", cause, err))
	}
	return cause
}

// errNotRetired says a sync point made the segments durable (and ran
// Options.BeforeRetire) but could not write the marker that retires the
// log files: they stay live, and the next sync point retires them.
var errNotRetired = errors.New("log files not retired")

// syncPoint makes every segment file and directory written since the last
// sync point durable, then records in the marker that every log file so
// far is no longer needed and deletes them. A failure to make segments
// durable leaves the log files in place and marks the segments for a
// rewrite from them (see rewriteFromLogs) before the next sync point flushes.
func (fs *FileStore) syncPoint() error {
	if !fs.logsLive && len(fs.dirty) == 0 {
		return nil
	}
	if fs.repaired.Swap(false) && fs.logsLive {
		fs.resync = true
	}
	// With no live log file the dirty set names only what rounds that
	// were not acknowledged created or wrote: a failed flush of it loses
	// nothing acknowledged, and the paths are flushed again by the next
	// sync point.
	var kept map[string]bool
	if !fs.logsLive {
		kept = maps.Clone(fs.dirty)
	}
	// A failed flush may have dropped dirty pages, which a later flush
	// would not write: the segments are written again from the live log
	// files first. A file's writeback error is also reported once to the
	// next flush of the file that has not seen it, even after its pages
	// were written again and flushed (by syncfs), so a failure is tried
	// once more at once, with the rewrite.
	for attempt := 0; ; attempt++ {
		var again []rewrite
		if fs.resync {
			var err error
			if again, err = fs.rewriteFromLogs(); err != nil {
				return fmt.Errorf("journal: sync point: %w", err)
			}
		}
		err := fs.syncDirty()
		if err == nil {
			// After a failed flush a reported success is checked: the
			// frames are read back past the page cache.
			if err = verifyRewrites(again); err == nil {
				break
			}
		}
		fs.suspect.Store(true)
		if !fs.logsLive {
			maps.Copy(fs.dirty, kept)
			fs.needSyncPoint = true
			return fmt.Errorf("journal: sync point: %w", err)
		}
		fs.resync = true
		if attempt == 1 {
			return fmt.Errorf("journal: sync point: %w", err)
		}
	}
	fs.resync = false
	if fs.log != nil {
		fs.log.Close()
		fs.log = nil
	}
	ldir := fs.logDir()
	if !fs.logsLive {
		fs.suspect.Store(false) // nothing to repair from
		fs.lastSyncPoint = time.Now()
		return nil
	}
	if fs.opts.BeforeRetire != nil {
		if err := fs.opts.BeforeRetire(); err != nil {
			return fmt.Errorf("journal: sync point: %w", err)
		}
	}
	fs.syncs.Add(2)
	if err := writeFileAtomic(filepath.Join(ldir, syncPointName), encodeSyncPoint(fs.logNext)); err != nil {
		return fmt.Errorf("journal: sync point: %w: %w", errNotRetired, err)
	}
	if entries, err := os.ReadDir(ldir); err == nil {
		for _, e := range entries {
			if n, ok := parseLogName(e.Name()); ok && n < fs.logNext {
				os.Remove(filepath.Join(ldir, e.Name()))
			}
		}
	}
	fs.retired()
	return nil
}

// retireByRemoval retires the log files after a sync point that made the
// segments durable but could not write its marker (errNotRetired, a full
// disk): they are removed in number order and the directory is fsynced,
// which needs no free block. A crash part way leaves a suffix of them,
// which replay finds already in the durable segments. The marker stays
// behind; the next sync point that can write it moves it on.
func (fs *FileStore) retireByRemoval() error {
	ldir := fs.logDir()
	entries, err := os.ReadDir(ldir)
	if err != nil {
		return fmt.Errorf("journal: retire log files: %w", err)
	}
	// ReadDir answers the names sorted, and the numbers have a fixed width.
	for _, e := range entries {
		if n, ok := parseLogName(e.Name()); ok && n < fs.logNext {
			if err := os.Remove(filepath.Join(ldir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("journal: retire log files: %w", err)
			}
		}
	}
	fs.syncs.Add(1)
	if err := syncDir(ldir); err != nil {
		return fmt.Errorf("journal: retire log files: %w", err)
	}
	fs.retired()
	return nil
}

// retired notes a sync point that retired every log file so far.
func (fs *FileStore) retired() {
	fs.logsLive = false
	fs.suspect.Store(false)
	fs.needSyncPoint = false
	fs.syncPointsN.Add(1)
	fs.lastSyncPoint = time.Now()
}

// syncDirty flushes the dirty set: one syncfs(2) when it holds at least
// Options.SyncFSMinFiles paths and syncfs reports errors here, else one
// fdatasync (files) or fsync (directories) per path, issued concurrently.
func (fs *FileStore) syncDirty() error {
	defer clear(fs.dirty)
	if fs.syncHook != nil {
		if err := fs.syncHook(); err != nil {
			return fmt.Errorf("journal: sync %s: %w", fs.dir, err)
		}
	}
	if n := len(fs.dirty); fs.root != nil && n > 0 && n >= fs.opts.SyncFSMinFiles {
		fs.syncs.Add(1)
		fs.syncfsN.Add(1)
		err := syncfs(fs.root)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("journal: sync %s: %w", fs.dir, err)
		}
		// Not available here (seccomp, emulated kernel): flush file by
		// file from now on.
		fs.root.Close()
		fs.root = nil
	}
	paths := make([]string, 0, len(fs.dirty))
	for p := range fs.dirty {
		paths = append(paths, p)
	}
	fs.syncs.Add(int64(len(paths)))
	return parallel(paths, fs.opts.SyncParallelism, func(p string) error {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil // removed since (Delete takes a sync point first)
		}
		if err != nil {
			return fmt.Errorf("journal: sync %s: %w", p, err)
		}
		defer f.Close()
		if fs.dirty[p] {
			err = f.Sync()
		} else {
			err = fdatasync(f)
		}
		if err != nil {
			return fmt.Errorf("journal: sync %s: %w", p, err)
		}
		return nil
	})
}

// closeNoSync stops the store like a crash after the last acknowledgement:
// no sync point is taken and the log files stay. For tests.
func (fs *FileStore) closeNoSync() {
	fs.skipCloseSync.Store(true)
	fs.Close()
}
