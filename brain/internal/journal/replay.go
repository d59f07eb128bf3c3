package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

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
	nums := logNums(entries, 0)
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
		held := make(map[string][]byte)
		if err := fs.replayFile(path, files, held); err != nil {
			return err
		}
		// Before the sync point retires the log file: the entries of a
		// session replay cannot write into stay durable in quarantine.
		for id, data := range held {
			if err := fs.writeQuarantine(id, n, data); err != nil {
				return fmt.Errorf("journal: replay %s: %w", path, err)
			}
		}
	}
	if !fs.logsLive {
		return nil
	}
	if err := fs.syncPoint(); err != nil && !errors.Is(err, errNotRetired) {
		return err
	}
	// Every segment replay wrote is durable; when only the marker could
	// not be written (a full disk), the log files stay live until the
	// next sync point, and the store opens.
	return nil
}

// replayFile applies the entries of one log file in order. Zero bytes
// after the last entry are the unused part of a preallocated file. A log
// file ends inside an entry only when a write was cut short (a crash, or
// a failed write after which the writer moved to a new file): that tail
// (without the zeros after it) is cut and kept beside the file.
//
// With held, the entries of a session whose directory is not a directory
// are not written but added to held[id], byte for byte, for quarantine,
// and the session is held damaged; every entry's records go to
// Options.OnReplay. Without held (a quarantine file being restored), such
// a directory fails the replay, and OnReplay is not called.
func (fs *FileStore) replayFile(path string, files map[string]*replayFile, held map[string][]byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("journal: replay %s: %w", path, err)
	}
	for off := 0; off < len(b); {
		e, n, err := decodeLogEntry(b[off:], fs.opts.MaxRecordBytes)
		if err != nil {
			end, torn := logTail(b, off, err, fs.opts.MaxRecordBytes)
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
			var de *DamagedError
			if held == nil || !errors.As(err, &de) {
				return err
			}
			held[e.id] = append(held[e.id], b[off:off+n]...)
			fs.holdQuarantined(e.id, de.Reason)
		}
		if held != nil && fs.opts.OnReplay != nil {
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
// damage: a record's bytes never hold a sector of zeros. So is an entry
// whose length runs past those bytes while a run of its own frames, from
// its start, ends within them and passes the entry's checksum
// (logLengthDamaged): its length field was damaged, and cutting it as torn
// would drop the acknowledged entries after it.
func logTail(b []byte, off int, err error, maxPayload int) (end int, torn bool) {
	end = off + zeroTrimmed(b[off:])
	if end == off || (errors.Is(err, errLogShort) && off+logEntryHeader > end) {
		return end, true
	}
	if n := uint64(binary.LittleEndian.Uint32(b[off:])); uint64(off+logEntryHeader)+n > uint64(end) {
		return end, !logLengthDamaged(b[off:end], maxPayload)
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

// logLengthDamaged reports whether b, holding an entry whose length field
// says it runs past the end of b, holds a complete entry all the same: a
// run of whole frames from the entry's start whose bytes pass the entry's
// checksum and decode as an entry of that length. A write cut short
// cannot look like that: the checksum covers the entry's whole body, so
// no shorter run of its frames passes it (but by a chance of 2^-32).
func logLengthDamaged(b []byte, maxPayload int) bool {
	if len(b) < logEntryHeader+logEntryFixed {
		return false
	}
	body := b[logEntryHeader:]
	at := logEntryFixed + int(body[1])
	if at > len(body) {
		return false
	}
	want := binary.LittleEndian.Uint32(b[4:])
	sum := crc32.Update(0, castagnoli, body[:at])
	fixed := make([]byte, 0, logEntryHeader)
	for at < len(body) {
		_, n, err := checkFrame(body[at:], max(maxPayload, DefaultMaxRecordBytes))
		if err != nil {
			return false
		}
		sum = crc32.Update(sum, castagnoli, body[at:at+n])
		at += n
		if sum != want {
			continue
		}
		fixed = binary.LittleEndian.AppendUint32(fixed[:0], uint32(at))
		fixed = append(fixed, b[4:logEntryHeader]...)
		if _, _, err := decodeLogEntry(append(fixed, body[:at]...), maxPayload); err == nil {
			return true
		}
	}
	return false
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
		if err := checkReplayDirs(e.id, sdir, jdir); err != nil {
			return err
		}
		if err := os.MkdirAll(jdir, 0o700); err != nil {
			return fmt.Errorf("journal: replay into %s: %w", jdir, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow|oNonBlock, 0o600)
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

// checkReplayDirs refuses, with a *DamagedError naming it, a session
// directory sdir (or its journal directory jdir) that exists and is not a
// directory: a symbolic link put in its place, to a directory elsewhere
// or to nothing. Replay never writes through it: the session's entries
// are kept in quarantine instead (see replayFile), since the entries of
// the live log files are the only copy of its last acknowledged records
// and the sync point that ends replay retires them.
func checkReplayDirs(id, sdir, jdir string) error {
	for _, dir := range []string{sdir, jdir} {
		fi, err := os.Lstat(dir)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("journal: replay into %s: %w", dir, err)
		}
		if m := fi.Mode(); !m.IsDir() {
			reason := linkedReason(m)
			if dir == jdir {
				reason = fmt.Sprintf("the journal directory is not a directory (mode %v)", m)
			}
			return fmt.Errorf("journal: replay: %w", &DamagedError{Session: id, File: dir, Reason: reason})
		}
	}
	return nil
}

// replay runs at open: it restores the records kept in quarantine for
// sessions whose directory is back in its place, replays the commit log,
// and once the segments restored are durable removes their quarantine.
func (fs *FileStore) replay() error {
	restored, err := fs.restoreQuarantine()
	if err != nil {
		return err
	}
	if err := fs.replayLog(); err != nil {
		return err
	}
	if len(restored) == 0 {
		return nil
	}
	if err := fs.syncPoint(); err != nil && !errors.Is(err, errNotRetired) {
		return err
	}
	for _, id := range restored {
		if err := fs.dropQuarantine(id); err != nil {
			// Restored again, identically, by the next open.
			fs.holdQuarantined(id, fmt.Sprintf("its records were written into the journal but their copy could not be removed (%v)", err))
		}
	}
	return nil
}
