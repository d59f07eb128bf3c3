package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	b, err := os.ReadFile(path)
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

func (fs *FileStore) logDir() string { return filepath.Join(fs.dir, commitLogDir) }

// replayFile is a segment file replay writes to.
type replayFile struct {
	f    *os.File
	size int64
}

// replayLog runs at open, before any session is loaded: it brings every
// segment up to date with the commit log files the last sync point did not
// retire, then takes a sync point so that they are retired.
func (fs *FileStore) replayLog() error {
	ldir := fs.logDir()
	entries, err := os.ReadDir(ldir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: open commit log: %w", err)
	}
	fs.logDirReady = true
	first, err := readSyncPoint(ldir)
	if err != nil {
		return err
	}
	fs.logNext = first
	var nums []uint64
	for _, e := range entries {
		if n, ok := parseLogName(e.Name()); ok && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	files := make(map[string]*replayFile)
	defer func() {
		for _, rf := range files {
			rf.f.Close()
		}
	}()
	for _, n := range nums {
		path := filepath.Join(ldir, logName(n))
		if n < first {
			// Retired by a sync point whose deletions were cut short.
			os.Remove(path)
			continue
		}
		fs.logNext = max(fs.logNext, n+1)
		fs.logsLive = true
		if err := fs.replayFile(path, files); err != nil {
			return err
		}
	}
	if !fs.logsLive {
		return nil
	}
	return fs.syncPoint()
}

// replayFile applies the entries of one log file in order. Zero bytes
// after the last entry are the unused part of a preallocated file. A log
// file ends inside an entry only when a write was cut short (a crash, or
// a failed write after which the writer moved to a new file): that tail
// (without the zeros after it) is cut and kept beside the file.
func (fs *FileStore) replayFile(path string, files map[string]*replayFile) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("journal: replay %s: %w", path, err)
	}
	for off := 0; off < len(b); {
		e, n, err := decodeLogEntry(b[off:], fs.opts.MaxRecordBytes)
		if err != nil {
			end, torn := logTail(b, off, err)
			if end == off {
				return nil // nothing was written here
			}
			if torn {
				if err := cutTorn(path, int64(off), int64(keptEnd(len(b), end)), len(b)); err != nil {
					return fmt.Errorf("journal: replay %s: cut incomplete entry at %d: %w", path, off, err)
				}
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("journal: replay: %w", &LogDamagedError{File: path, Offset: int64(off), Reason: err.Error()})
		}
		if err := fs.applyEntry(&e, path, int64(off), files); err != nil {
			return err
		}
		if fs.opts.OnReplay != nil {
			if err := fs.replayed(&e); err != nil {
				return fmt.Errorf("journal: replay %s: %w", path, err)
			}
		}
		off += n
	}
	return nil
}

// replayed hands the records of a replayed entry to Options.OnReplay.
func (fs *FileStore) replayed(e *logEntry) error {
	recs := make([]Record, 0, e.count)
	for p := e.frames; len(p) > 0; {
		r, n, err := decodeFrame(p, max(fs.opts.MaxRecordBytes, DefaultMaxRecordBytes))
		if err != nil {
			return err
		}
		recs = append(recs, r)
		p = p[n:]
	}
	return fs.opts.OnReplay(e.id, recs)
}

// tornSector is the unit a write cut short leaves unwritten: a block of
// the file a crash did not reach reads as zero, from a boundary of this
// alignment (or from where the write began) to one.
const tornSector = 512

// logTail judges the bytes of a log file b from off, where an entry failed
// to decode with err. It answers end, where the bytes that are not zero
// end (end == off: nothing but zeros follow, the unused part of a
// preallocated file), and whether b[off:end] is a write cut short rather
// than damage: the entry runs past the end of the file or into the zeros
// after the last byte written, or a block of it reads as zero (an aligned
// sector, or the part of the sector it starts in that follows it). A
// complete entry with none of these signs that does not check out is
// damage: a record's bytes never hold a sector of zeros.
func logTail(b []byte, off int, err error) (end int, torn bool) {
	end = off + zeroTrimmed(b[off:])
	if end == off || errors.Is(err, errLogShort) {
		return end, true
	}
	if n := int(binary.LittleEndian.Uint32(b[off:])); off+logEntryHeader+n > end {
		return end, true
	}
	first := min((off/tornSector+1)*tornSector, end)
	if allZero(b[off:first]) {
		return end, true
	}
	for s := first; s+tornSector <= end; s += tornSector {
		if allZero(b[s : s+tornSector]) {
			return end, true
		}
	}
	return end, false
}

// zeroTrimmed answers the length of b without its trailing zero bytes.
func zeroTrimmed(b []byte) int {
	n := len(b)
	for n >= len(zeroPage) && bytes.Equal(b[n-len(zeroPage):n], zeroPage[:]) {
		n -= len(zeroPage)
	}
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return n
}

// keptEnd answers where the bytes kept of a torn tail end, for a file of
// size bytes whose bytes that are not zero end at end: at the end of the
// sector that byte is in (zeros after it are a preallocated file's unused
// part), or the file's end.
func keptEnd(size, end int) int {
	return min(size, (end+tornSector-1)/tornSector*tornSector)
}

// cutTorn cuts a log file of size bytes at off, keeping its bytes
// [off, end) beside it (the rest are zeros).
func cutTorn(path string, off, end int64, size int) error {
	if end < int64(size) {
		if err := os.Truncate(path, end); err != nil {
			return err
		}
	}
	return keepTorn(path, off)
}

func allZero(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), 4096)
		if !bytes.Equal(b[:k], zeroPage[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}

var zeroPage [4096]byte

// applyEntry makes e's frames present at their offset in their segment:
// identical bytes are left alone; a segment that ends before them gets
// them appended; bytes that differ or stop short (a torn or lost segment
// tail) are cut from the entry's offset on, kept beside the segment, and
// the frames are written in their place.
func (fs *FileStore) applyEntry(e *logEntry, logPath string, logOff int64, files map[string]*replayFile) error {
	sdir := filepath.Join(fs.dir, e.id)
	jdir := filepath.Join(sdir, "journal")
	path := filepath.Join(jdir, segmentName(e.segFirst))
	rf := files[path]
	if rf == nil {
		if err := os.MkdirAll(jdir, 0o700); err != nil {
			return fmt.Errorf("journal: replay into %s: %w", jdir, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("journal: replay into %s: %w", path, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("journal: replay into %s: %w", path, err)
		}
		rf = &replayFile{f: f, size: fi.Size()}
		files[path] = rf
		fs.dirty[path] = false
		fs.dirty[jdir] = true
		fs.dirty[sdir] = true
		fs.dirty[fs.dir] = true
	}
	if rf.size < e.off {
		return fmt.Errorf("journal: replay: %w", &LogDamagedError{File: logPath, Offset: logOff,
			Reason: fmt.Sprintf("segment %s holds %d bytes, the entry's frames start at offset %d", path, rf.size, e.off)})
	}
	end := e.off + int64(len(e.frames))
	if rf.size > e.off {
		if rf.size >= end {
			have := make([]byte, len(e.frames))
			if _, err := rf.f.ReadAt(have, e.off); err != nil {
				return fmt.Errorf("journal: replay: read %s: %w", path, err)
			}
			if bytes.Equal(have, e.frames) {
				return nil
			}
		}
		if err := keepTorn(path, e.off); err != nil {
			return fmt.Errorf("journal: replay: cut %s at %d: %w", path, e.off, err)
		}
		rf.size = e.off
	}
	if _, err := rf.f.WriteAt(e.frames, e.off); err != nil {
		return fmt.Errorf("journal: replay: write %s: %w", path, err)
	}
	rf.size = end
	return nil
}

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
// cut back (best effort; replay cuts a torn tail anyway) and closed, the
// writer moves to a new log file, and the next group commit first takes a
// sync point so that the failed file is retired.
func (fs *FileStore) logFailed(err error) error {
	name := fs.log.Name()
	fs.log.Truncate(fs.logSize)
	fs.log.Close()
	fs.log = nil
	fs.needSyncPoint = true
	fs.suspect.Store(true)
	return fmt.Errorf("journal: commit log %s: %w", name, err)
}

// syncPoint makes every segment file and directory written since the last
// sync point durable, then records in the marker that every log file so
// far is no longer needed and deletes them. A failure to make segments
// durable leaves the log files in place and marks the segments for a
// rewrite from them (see rewriteFromLogs) before the next sync point flushes.
func (fs *FileStore) syncPoint() error {
	if fs.syncPointErr != nil {
		return fs.syncPointErr
	}
	if !fs.logsLive && len(fs.dirty) == 0 {
		return nil
	}
	if fs.repaired.Swap(false) && fs.logsLive {
		fs.resync = true
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
			// Nothing to write the segments again from.
			fs.syncPointErr = fmt.Errorf("journal: sync point: %w", err)
			return fs.syncPointErr
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
		return fmt.Errorf("journal: sync point: %w", err)
	}
	if entries, err := os.ReadDir(ldir); err == nil {
		for _, e := range entries {
			if n, ok := parseLogName(e.Name()); ok && n < fs.logNext {
				os.Remove(filepath.Join(ldir, e.Name()))
			}
		}
	}
	fs.logsLive = false
	fs.suspect.Store(false)
	fs.needSyncPoint = false
	fs.syncPointsN.Add(1)
	fs.lastSyncPoint = time.Now()
	return nil
}

// syncDirty flushes the dirty set: one syncfs(2) when it holds at least
// Options.SyncFSMinFiles paths and syncfs reports errors here, else one
// fdatasync (files) or fsync (directories) per path, issued concurrently.
func (fs *FileStore) syncDirty() error {
	defer clear(fs.dirty)
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
	var nums []uint64
	for _, e := range entries {
		if n, ok := parseLogName(e.Name()); ok && n >= first && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
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
// writing, when it exists and holds e's whole range; else nil.
func (sf segmentFiles) holding(path string, e *logEntry) (*os.File, error) {
	f, seen := sf[path]
	if !seen {
		var err error
		f, err = os.OpenFile(path, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
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
