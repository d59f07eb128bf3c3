package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// recover opens s from disk: it checks every segment, truncates an
// incomplete final frame (keeping the cut bytes beside the segment) and
// builds the sparse index. A damaged journal leaves s in stateDamaged with
// nothing rewritten. s.mu is held.
//
// Damage, or a torn tail, that the live commit log covers is pages the
// kernel dropped after a failed writeback (see repairFromLogs): the
// segments are repaired from the log and read again. After a write or
// flush failure they are repaired before they are read at all.
func (fs *FileStore) recover(s *session, keep bool) error {
	fs.recoveries.Add(1)
	if de := fs.quarantined(s.id); de != nil {
		s.resetIndex()
		s.state, s.damage = stateDamaged, de
		return nil
	}
	if err := checkSessionDir(s); err != nil || s.state == stateDamaged {
		return err
	}
	repaired := fs.suspect.Load()
	if repaired {
		if _, err := fs.repairFromLogs(s.id); err != nil {
			return err
		}
	}
	err := fs.recoverOnce(s, keep, repaired)
	if errors.Is(err, errTornTail) {
		// Frames are written whole and a failed write is cut back, so a
		// torn tail outside a crash is lost pages, unless no live log
		// names them.
		if _, err := fs.repairFromLogs(s.id); err != nil {
			return err
		}
		return fs.recoverOnce(s, keep, true)
	}
	if err != nil || s.state != stateDamaged || repaired {
		return err
	}
	if n, err := fs.repairFromLogs(s.id); err != nil || n == 0 {
		return err
	}
	return fs.recoverOnce(s, keep, true)
}

// checkSessionDir refuses, as damage, a session directory that is not a
// directory: a symbolic link (to a directory elsewhere, or to nothing),
// a file. The store creates every session directory itself and, as with
// its segments and checkpoints, never reads or writes through a link;
// left as it is, the session is listed and refused, and nothing of it is
// touched. s.mu is held.
func checkSessionDir(s *session) error {
	fi, err := os.Lstat(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: open session %s: %w", s.id, err)
	}
	if m := fi.Mode(); !m.IsDir() {
		s.resetIndex()
		s.state = stateDamaged
		s.damage = &DamagedError{Session: s.id, File: s.dir, Reason: linkedReason(m)}
	}
	return nil
}

// errTornTail stops a recovery that may not cut a torn tail.
var errTornTail = errors.New("journal: torn final frame")

// recoverOnce is recover without the repair from the commit log; unless
// cut, it answers errTornTail rather than cut an incomplete final frame.
func (fs *FileStore) recoverOnce(s *session, keep, cut bool) error {
	jdir := filepath.Join(s.dir, "journal")
	entries, err := os.ReadDir(jdir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: open session %s: %w", s.id, err)
	}
	var firsts []uint64
	for _, e := range entries {
		if first, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			firsts = append(firsts, first)
		}
	}
	slices.Sort(firsts)

	if start, ok := fs.checkpointStart(s, jdir, firsts); ok {
		if err := fs.recoverFrom(s, jdir, firsts, start, false, cut); err != nil || s.state == stateReady {
			return err
		}
		// Damage after the checkpoint's prefix: judge the whole journal
		// without trusting the checkpoint.
	}
	return fs.recoverFrom(s, jdir, firsts, nil, keep, cut)
}

// coverage is the journal prefix a matching checkpoint vouches for.
type coverage struct {
	segs    []segInfo // the stamped segments; the last one's size is the end of record through
	through uint64
	lastOff int64 // offset of record through in the last stamped segment
	lastMs  int64 // its recorded_at_ms
}

// checkpointStart returns the prefix covered by s's checkpoint when the
// checkpoint matches the segment files: same names, the same sizes for
// every stamped segment but the last, which may have grown, and record
// `through` found intact where the checkpoint says it ends. s.mu is held.
func (fs *FileStore) checkpointStart(s *session, jdir string, firsts []uint64) (*coverage, bool) {
	cp, err := readCheckpointFile(s, len(firsts), false)
	if err != nil || cp.through == 0 || cp.lastOff < 0 || len(cp.stamps) == 0 || len(cp.stamps) > len(firsts) {
		return nil, false
	}
	if len(firsts) > len(cp.stamps) && firsts[len(cp.stamps)] <= cp.through {
		return nil, false
	}
	cov := &coverage{through: cp.through, lastOff: cp.lastOff}
	for i, st := range cp.stamps {
		if firsts[i] != st.first {
			return nil, false
		}
		fi, err := os.Stat(filepath.Join(jdir, segmentName(st.first)))
		if err != nil || !fi.Mode().IsRegular() {
			return nil, false
		}
		last := i == len(cp.stamps)-1
		if (!last && fi.Size() != st.size) || (last && fi.Size() < st.size) {
			return nil, false
		}
		cov.segs = append(cov.segs, segInfo(st))
	}
	// Record `through` must end exactly where the last stamp says.
	last := cov.segs[len(cov.segs)-1]
	f, err := os.Open(filepath.Join(jdir, segmentName(last.first)))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := newFrameScanner(f, cp.lastOff, last.size, fs.opts.MaxRecordBytes)
	defer sc.release()
	_, p, _, err := sc.next()
	if err != nil || sc.off != last.size {
		return nil, false
	}
	v, err := parsePayload(p)
	if err != nil || v.seq != cp.through {
		return nil, false
	}
	cov.lastMs = v.ms
	return cov, true
}

// recoverFrom checks s's segments, from the end of the covered prefix when
// cov is set (its frames are not read) or from the start. With keep (and
// no cov), each segment is read with one read and checked in memory, and
// the checked bytes are kept in s.warm within the store's budget. Unless
// mayCut, an incomplete final frame answers errTornTail, with nothing cut.
// s.mu is held.
func (fs *FileStore) recoverFrom(s *session, jdir string, firsts []uint64, cov *coverage, keep, mayCut bool) (err error) {
	s.resetIndex()
	s.lastMs = 0
	var warm *warmSet
	if keep && cov == nil {
		warm = &warmSet{budget: &fs.warmBytes}
		defer func() {
			if err != nil || s.state != stateReady || len(warm.segs) == 0 {
				warm.release()
				return
			}
			s.warm = warm
		}()
	}
	damaged := func(path string, off int64, format string, args ...any) error {
		s.resetIndex()
		s.state = stateDamaged
		s.damage = &DamagedError{Session: s.id, File: path, Offset: off, Reason: fmt.Sprintf(format, args...)}
		return nil
	}
	expect := uint64(1)
	skip := 0
	var from int64
	if cov != nil {
		// Index the covered prefix by segment starts only; Read indexes it
		// fully the first time it reads there.
		for _, seg := range cov.segs {
			s.segs = append(s.segs, seg)
			s.addIndex(seg.first, 0)
		}
		s.segs = s.segs[:len(s.segs)-1]
		skip = len(cov.segs) - 1
		from = cov.segs[skip].size
		s.index = append(s.index, indexEntry{seq: cov.through + 1, seg: skip, off: from})
		expect = cov.through + 1
		s.lastMs = cov.lastMs
		s.cold = indexEntry{seq: cov.through + 1, seg: skip, off: from}
	}
	for i := skip; i < len(firsts); i++ {
		first := firsts[i]
		final := i == len(firsts)-1
		path := filepath.Join(jdir, segmentName(first))
		start := int64(0)
		if cov != nil && i == skip {
			start = from
		} else if first != expect {
			if final && first > expect && i > 0 {
				if holdsNothing(path) {
					// An empty final segment past the records: created by a
					// roll whose records never became durable (acknowledged
					// ones are restored by replay). It holds nothing; zeros
					// in it are the size of such a record made durable
					// without its data.
					if err := os.Remove(path); err != nil {
						return fmt.Errorf("journal: open session %s: %w", s.id, err)
					}
					if err := syncDir(jdir); err != nil {
						return fmt.Errorf("journal: open session %s: %w", s.id, err)
					}
					break
				}
			}
			return damaged(path, 0, "segment starts at sequence %d, want %d (sequences are not dense)", first, expect)
		}
		s.segs = append(s.segs, segInfo{first: first})
		var kept warmSeg
		var keepInto *warmSeg
		if warm != nil && (len(warm.segs) == len(s.segs)-1) {
			keepInto = &kept
		}
		end, next, cut, err := fs.scanSegment(s, path, start, expect, warm, keepInto)
		if err != nil {
			var de *DamagedError
			if errors.As(err, &de) {
				return damaged(de.File, de.Offset, "%s", de.Reason)
			}
			return fmt.Errorf("journal: open session %s: %w", s.id, err)
		}
		if cut >= 0 {
			// Only segments that hold nothing may follow a torn tail:
			// those a roll of the crashed round created.
			if !final && !holdNothing(jdir, firsts[i+1:]) {
				return damaged(path, end, "incomplete frame in a non-final segment")
			}
			if !mayCut {
				return errTornTail
			}
			if n, ok, err := lengthDamaged(path, end); err != nil {
				return fmt.Errorf("journal: open session %s: %w", s.id, err)
			} else if ok {
				return damaged(path, end, "complete frame whose length field says more bytes than its %d-byte payload", n)
			}
			if err := keepTorn(path, end); err != nil {
				return fmt.Errorf("journal: open session %s: %w", s.id, err)
			}
			if !final {
				if err := removeSegments(jdir, firsts[i+1:]); err != nil {
					return fmt.Errorf("journal: open session %s: %w", s.id, err)
				}
				firsts, final = firsts[:i+1], true
			}
		}
		if end == 0 && !final {
			return damaged(path, 0, "empty non-final segment")
		}
		s.segs[len(s.segs)-1].size = end
		expect = next
		if kept.b != nil {
			kept.first = first
			warm.segs = append(warm.segs, kept)
			warm.next = next
		}
	}
	s.state = stateReady
	s.damage = nil
	s.committedNext, s.reservedNext = expect, expect
	return nil
}

// scanSegment reads the frames of one segment, which must hold sequences
// from expect on. It returns the end of the last complete frame, the next
// expected sequence and, when the file ends inside a frame, the offset of
// that frame as cut (else -1). Damage is reported as *DamagedError.
func (fs *FileStore) scanSegment(s *session, path string, start int64, expect uint64, warm *warmSet, keep *warmSeg) (end int64, next uint64, cut int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, -1, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, -1, err
	}
	if fi.Size() < start {
		return 0, 0, -1, io.ErrUnexpectedEOF
	}
	// frameDamage reports the frame at off that did not check out as
	// damage; other errors (I/O) are returned as they are.
	frameDamage := func(off int64, err error) error {
		var se *seqError
		switch {
		case errors.Is(err, errChecksum):
			return &DamagedError{Session: s.id, File: path, Offset: off, Reason: "complete frame with a bad checksum"}
		case errors.Is(err, errFrameSize), errors.Is(err, errBadPayload), errors.As(err, &se):
			return &DamagedError{Session: s.id, File: path, Offset: off, Reason: err.Error()}
		}
		return err
	}
	if keep != nil && start == 0 && fs.growWarm(warm, fi.Size()) {
		// One read of the whole segment, checked in memory; the checked
		// prefix is kept for the Reads that follow.
		b, c, err, rerr := readChecked(f, fi.Size(), expect, fs.opts.MaxRecordBytes, len(s.segs)-1, s.lastMs, s.index)
		if rerr != nil {
			return 0, 0, -1, rerr
		}
		s.index, s.lastMs = c.index, c.lastMs
		zeros := false
		if err != nil && !errors.Is(err, errShortFrame) {
			if zeros, rerr = tornIntoZeros(f, c.end, fi.Size(), fs.opts.MaxRecordBytes); rerr != nil {
				return 0, 0, -1, rerr
			}
		}
		switch {
		case err == nil:
			keep.b, keep.n = b, c.next-expect
			return c.end, c.next, -1, nil
		case errors.Is(err, errShortFrame) || zeros:
			if c.end > 0 {
				keep.b, keep.n = b[:c.end:c.end], c.next-expect
			} else {
				// Cut at its first frame: nothing checked to keep, and
				// the cut bytes are not held in memory.
				warm.give(fi.Size())
			}
			return c.end, c.next, c.end, nil
		}
		return 0, 0, -1, frameDamage(c.end, err)
	}
	// tornOrDamage answers the frame at off that did not check out as
	// the start of a torn tail when it is a write cut short whose missing
	// sectors read as zero (tornIntoZeros), else as frameDamage does.
	tornOrDamage := func(off int64, err error) (int64, uint64, int64, error) {
		err = frameDamage(off, err)
		var de *DamagedError
		if !errors.As(err, &de) {
			return 0, 0, -1, err
		}
		if zeros, rerr := tornIntoZeros(f, off, fi.Size(), fs.opts.MaxRecordBytes); rerr != nil {
			return 0, 0, -1, rerr
		} else if zeros {
			return off, expect, off, nil
		}
		return 0, 0, -1, err
	}
	sc := newFrameScanner(f, start, fi.Size(), fs.opts.MaxRecordBytes)
	defer sc.release()
	for {
		at, p, _, err := sc.next()
		switch {
		case err == io.EOF:
			return at, expect, -1, nil
		case errors.Is(err, errShortFrame):
			return at, expect, at, nil
		case err != nil:
			return tornOrDamage(at, err)
		}
		if !payloadOK(p) {
			_, err := parsePayload(p)
			return tornOrDamage(at, err)
		}
		if seq := leUint64(p[2:]); seq != expect {
			return tornOrDamage(at, &seqError{got: seq, want: expect})
		}
		s.addIndex(expect, at)
		s.lastMs = max(s.lastMs, int64(leUint64(p[10:])))
		expect++
	}
}

// holdNothing reports whether every segment of jdir named in firsts
// holds nothing (see holdsNothing).
func holdNothing(jdir string, firsts []uint64) bool {
	for _, first := range firsts {
		if !holdsNothing(filepath.Join(jdir, segmentName(first))) {
			return false
		}
	}
	return true
}

// removeSegments removes the segments of jdir named in firsts, last
// first, and fsyncs the directory.
func removeSegments(jdir string, firsts []uint64) error {
	for _, first := range slices.Backward(firsts) {
		if err := os.Remove(filepath.Join(jdir, segmentName(first))); err != nil {
			return err
		}
	}
	return syncDir(jdir)
}

// holdsNothing reports whether the file at path is empty or holds
// nothing but zero bytes.
func holdsNothing(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	zeros, err := zerosToEnd(f, 0, fi.Size())
	return err == nil && zeros
}

// zerosToEnd reports whether the bytes of f from off to size are all
// zero: the tail a crash leaves when the file's new size became durable
// without the data of writes that were never acknowledged.
func zerosToEnd(f *os.File, off, size int64) (bool, error) {
	buf := make([]byte, min(size-off, 64<<10))
	for off < size {
		n := int(min(size-off, int64(len(buf))))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false, err
		}
		if !allZero(buf[:n]) {
			return false, nil
		}
		off += int64(n)
	}
	return true, nil
}

// tornIntoZeros reports whether the frame at off of f (size bytes), which
// did not check out, is a write cut short by a crash that made the file's
// new size durable without all of its data: nothing but zero bytes from
// off to the end, or a frame after whose last byte that is not zero the
// file holds only zeros and whose length says it ends past the 512-byte
// sector holding that byte (so at least its last sector never reached the
// disk), unless its length field was damaged (lengthDamagedAt). A frame
// that ends within sectors holding data was written whole: when it does
// not check out, it is damage.
func tornIntoZeros(f *os.File, off, size int64, maxRecord int) (bool, error) {
	end, err := dataEnd(f, off, size)
	if err != nil || end == off {
		return err == nil, err
	}
	if size-off < frameHeaderSize {
		return false, nil
	}
	var h [frameHeaderSize]byte
	if _, err := f.ReadAt(h[:], off); err != nil {
		return false, err
	}
	n := int64(binary.LittleEndian.Uint32(h[:]))
	written := (end + tornSector - 1) / tornSector * tornSector
	if n == 0 || n > int64(maxRecord) || off+frameHeaderSize+n <= written {
		return false, nil
	}
	b := make([]byte, min(size, off+frameHeaderSize+n)-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return false, err
	}
	_, damaged := lengthDamagedAt(b)
	return !damaged, nil
}

// dataEnd answers the offset just past the last byte of f that is not
// zero between off and size (off when there is none).
func dataEnd(f *os.File, off, size int64) (int64, error) {
	buf := make([]byte, min(size-off, 64<<10))
	for size > off {
		n := min(size-off, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], size-n); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return size - n + i + 1, nil
			}
		}
		size -= n
	}
	return off, nil
}

// lengthDamaged reports whether the frame at off in path, which says it
// ends past the end of the file, is a complete frame all the same: a
// payload whose own fields (kind, data and origin lengths) end within the
// file and that passes the frame's checksum, whose length field was
// damaged. An incomplete write cannot look like that: the payload of a
// frame ends exactly where its length says, so a prefix of one ends past
// the file by its own fields too. It answers the payload's length.
func lengthDamaged(path string, off int64) (int, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if fi.Size()-off < frameHeaderSize+payloadFixed {
		return 0, false, nil
	}
	// The frame says it is longer than the rest of the file, and no frame
	// is longer than the record limit: the rest is bounded by that.
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return 0, false, err
	}
	n, ok := lengthDamagedAt(b)
	return n, ok, nil
}

// lengthDamagedAt reports whether b, which starts with a frame, holds a
// payload whose own fields end within b and that passes the frame's
// checksum and decodes (see lengthDamaged), and answers its length.
func lengthDamagedAt(b []byte) (int, bool) {
	if len(b) < frameHeaderSize+payloadFixed {
		return 0, false
	}
	sum, p := binary.LittleEndian.Uint32(b[4:]), b[frameHeaderSize:]
	end := uint64(payloadFixed) + uint64(binary.LittleEndian.Uint16(p[18:])) + uint64(binary.LittleEndian.Uint32(p[20:]))
	if p[1]&flagOrigin != 0 {
		if end+4 > uint64(len(p)) {
			return 0, false
		}
		end += 4 + uint64(binary.LittleEndian.Uint32(p[end:]))
	}
	if end > uint64(len(p)) || crc32.Checksum(p[:end], castagnoli) != sum || !payloadOK(p[:end]) {
		return 0, false
	}
	return int(end), true
}

// keepTorn moves the incomplete tail of path (from off) into
// "<path>.torn-<off>" and truncates path to off, durably. When the copy
// cannot be made, path is left as it was and no copy stays.
func keepTorn(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	tail, err := io.ReadAll(io.NewSectionReader(f, off, 1<<62))
	if err != nil {
		return err
	}
	keep := fmt.Sprintf("%s.torn-%d", path, off)
	kf, err := os.OpenFile(keep, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	for n := 1; errors.Is(err, os.ErrExist); n++ {
		// An earlier crash cut at the same offset: keep both.
		kf, err = os.OpenFile(fmt.Sprintf("%s.%d", keep, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return err
	}
	// Until the tail is cut, path still holds it: a copy that failed (a
	// full disk) is removed, so that failed tries leave nothing behind
	// and the next one keeps the tail under the same name.
	_, err = kf.Write(tail)
	if err == nil {
		err = kf.Sync()
	}
	err = errors.Join(err, kf.Close())
	if err == nil {
		err = f.Truncate(off)
	}
	if err != nil {
		_ = os.Remove(kf.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
