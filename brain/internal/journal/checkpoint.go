package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
)

const (
	checkpointName   = "checkpoint"
	checkpointMagic1 = "BRAINCK1"
	checkpointMagic  = "BRAINCK2"
	checkpointFixed  = 8 + 4 + 8 + 4 // magic, checksum, through, stamp count
)

// stamp identifies a segment file a checkpoint covers.
type stamp struct {
	first uint64 // the segment's name
	size  int64  // its size, or for the last covered segment the end of record `through`
}

// checkpointFile is a decoded checkpoint.
type checkpointFile struct {
	through uint64
	stamps  []stamp
	lastOff int64 // offset of record `through` in the last stamped segment; -1 if unknown
	payload []byte
}

// encodeCheckpoint answers the bytes of a checkpoint file.
func encodeCheckpoint(through uint64, stamps []stamp, lastOff int64, payload []byte) []byte {
	return append(checkpointHeader(through, stamps, lastOff, payload), payload...)
}

// checkpointHeader answers the bytes of a checkpoint before its payload,
// their checksum covering the payload too: the payload is written after
// them as it is, not copied behind them.
func checkpointHeader(through uint64, stamps []stamp, lastOff int64, payload []byte) []byte {
	b := make([]byte, 0, checkpointFixed+16*len(stamps)+8+4)
	b = append(b, checkpointMagic...)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, through)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(stamps)))
	for _, st := range stamps {
		b = binary.LittleEndian.AppendUint64(b, st.first)
		b = binary.LittleEndian.AppendUint64(b, uint64(st.size))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(lastOff))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	sum := crc32.Update(crc32.Checksum(b[12:], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(b[8:], sum)
	return b
}

var errBadCheckpoint = errors.New("journal: malformed checkpoint")

// decodeCheckpoint decodes a checkpoint of either version; version 1 has
// no last frame offset.
func decodeCheckpoint(b []byte) (checkpointFile, error) {
	cp, head, err := decodeCheckpointHead(b)
	if err != nil {
		return cp, err
	}
	if crc32.Checksum(b[12:], castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return cp, fmt.Errorf("%w: checksum mismatch", errBadCheckpoint)
	}
	plen := uint64(binary.LittleEndian.Uint32(b[head-4:]))
	if rest := b[head:]; plen != uint64(len(rest)) {
		return cp, fmt.Errorf("%w: payload length %d, %d bytes left", errBadCheckpoint, plen, len(rest))
	}
	cp.payload = b[head:]
	return cp, nil
}

// decodeCheckpointHead decodes the fields of a checkpoint before its
// payload from b, which holds at least them, and answers where the
// payload starts. The checksum is not checked.
func decodeCheckpointHead(b []byte) (checkpointFile, int, error) {
	var cp checkpointFile
	if len(b) < checkpointFixed+4 || (string(b[:8]) != checkpointMagic && string(b[:8]) != checkpointMagic1) {
		return cp, 0, fmt.Errorf("%w: bad header", errBadCheckpoint)
	}
	v1 := string(b[:8]) == checkpointMagic1
	cp.through = binary.LittleEndian.Uint64(b[12:])
	n := uint64(binary.LittleEndian.Uint32(b[20:]))
	rest := b[checkpointFixed:]
	fixed := uint64(12)
	if v1 {
		fixed = 4
	}
	if n*16+fixed > uint64(len(rest)) {
		return cp, 0, fmt.Errorf("%w: %d stamps do not fit", errBadCheckpoint, n)
	}
	cp.stamps = make([]stamp, n)
	for i := range cp.stamps {
		cp.stamps[i] = stamp{first: binary.LittleEndian.Uint64(rest), size: int64(binary.LittleEndian.Uint64(rest[8:]))}
		rest = rest[16:]
	}
	cp.lastOff = -1
	if !v1 {
		cp.lastOff = int64(binary.LittleEndian.Uint64(rest))
	}
	return cp, checkpointFixed + int(n*16+fixed), nil
}

// WriteCheckpoint implements Store.
func (fs *FileStore) WriteCheckpoint(ctx context.Context, id string, through uint64, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if uint64(len(payload)) > math.MaxUint32 {
		return fmt.Errorf("%w: checkpoint of %s holds %d bytes, at most %d", ErrTooLarge, id, len(payload), uint64(math.MaxUint32))
	}
	s, err := fs.readySession(id)
	if err != nil {
		return err
	}
	defer fs.release(s)
	if s.committedNext == 1 {
		s.mu.Unlock()
		return errCheckpointNothing(id)
	}
	if through >= s.committedNext {
		next := s.committedNext
		s.mu.Unlock()
		return fmt.Errorf("%w: checkpoint through %d but session %s ends at %d", ErrInvalid, through, id, next-1)
	}
	segs := slices.Clone(s.segs)
	var start indexEntry
	if through > 0 {
		start = s.seek(through)
	}
	// A checkpoint through the last record published needs no read: its
	// frame starts at s.tail and ends where the segment does.
	tail := s.tail
	if tail.seq != through || through+1 != s.committedNext || tail.seg != len(segs)-1 {
		tail = indexEntry{}
	}
	deletes := s.deletes.Load()
	s.mu.Unlock()

	var stamps []stamp
	lastOff := int64(0)
	for i, seg := range segs {
		if seg.first > through {
			break
		}
		stamps = append(stamps, stamp(seg))
		if i+1 < len(segs) && segs[i+1].first <= through {
			continue
		}
		// Last covered segment: cover up to the end of record `through`.
		off := int64(0)
		if start.seg == i {
			off = start.off
		}
		at, end := tail.off, seg.size
		if tail.seq == 0 || tail.seg != i {
			at, end, err = fs.frameOf(s, seg, off, through)
			if err != nil {
				return err
			}
		}
		lastOff = at
		stamps[len(stamps)-1].size = end
	}
	if fs.ckHook != nil {
		fs.ckHook()
	}
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	if s.deletes.Load() != deletes {
		// The records it covers were deleted meanwhile: writing it would
		// bring the session's directory back, with a checkpoint a new
		// session of the same id could match.
		return fmt.Errorf("%w: session %s was deleted before its checkpoint was written", ErrConflict, id)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("journal: checkpoint %s: %w", id, err)
	}
	return overwriteFile(filepath.Join(s.dir, checkpointName), checkpointHeader(through, stamps, lastOff, payload), payload)
}

// errCheckpointNothing refuses a checkpoint of a session that holds no
// record: there is nothing for it to cover, and writing it would make the
// directory of a session that does not exist (never listed, yet kept on
// disk) with a checkpoint a session later created under the id would
// find.
func errCheckpointNothing(id string) error {
	return fmt.Errorf("%w: checkpoint of session %s, which holds no record", ErrInvalid, id)
}

// frameOf finds where record seq starts and ends within seg, scanning from
// off (an index point at or before seq in the same segment).
func (fs *FileStore) frameOf(s *session, seg segInfo, off int64, seq uint64) (int64, int64, error) {
	path := filepath.Join(s.dir, "journal", segmentName(seg.first))
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("journal: checkpoint: %w", err)
	}
	defer f.Close()
	sc := newFrameScanner(f, off, seg.size, fs.opts.MaxRecordBytes)
	defer sc.release()
	for {
		at, p, n, err := sc.next()
		if err != nil {
			return 0, 0, fmt.Errorf("journal: checkpoint: locate %d in %s: %w", seq, path, err)
		}
		if len(p) >= payloadFixed && leUint64(p[2:]) == seq {
			return at, at + int64(n), nil
		}
	}
}

// ReadCheckpoint implements Store.
func (fs *FileStore) ReadCheckpoint(ctx context.Context, id string) (uint64, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	s, err := fs.readySession(id)
	if err != nil {
		return 0, nil, err
	}
	defer fs.release(s)
	segs := slices.Clone(s.segs)
	committed := s.committedNext
	s.mu.Unlock()
	cp, err := readCheckpointFile(s, len(segs), true)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, errNotRegular) {
		return 0, nil, fmt.Errorf("journal: checkpoint of %s: %w", id, ErrNotFound)
	}
	if errors.Is(err, errBadCheckpoint) {
		return 0, nil, fmt.Errorf("journal: checkpoint of %s: %v: %w", id, err, ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("journal: checkpoint of %s: %w", id, err)
	}
	if reason := staleReason(cp.through, cp.stamps, segs, committed); reason != "" {
		return 0, nil, fmt.Errorf("journal: checkpoint of %s is stale (%s): %w", id, reason, ErrNotFound)
	}
	return cp.through, cp.payload, nil
}

// staleReason explains why stamps do not describe the journal, or "".
func staleReason(through uint64, stamps []stamp, segs []segInfo, committed uint64) string {
	if through >= committed {
		return fmt.Sprintf("covers %d records, the journal holds %d", through, committed-1)
	}
	covered := 0
	for _, seg := range segs {
		if seg.first <= through {
			covered++
		}
	}
	if covered != len(stamps) {
		return fmt.Sprintf("covers %d segments, the journal has %d up to sequence %d", len(stamps), covered, through)
	}
	for i, st := range stamps {
		seg := segs[i]
		if st.first != seg.first {
			return fmt.Sprintf("segment %s is now %s", segmentName(st.first), segmentName(seg.first))
		}
		last := i == len(stamps)-1
		if (!last && seg.size != st.size) || (last && seg.size < st.size) {
			return fmt.Sprintf("segment %s has %d bytes, the checkpoint saw %d", segmentName(st.first), seg.size, st.size)
		}
	}
	return ""
}

// checkpointChunk is the most of a checkpoint's payload read at once
// when it is only checked; a checkpoint no longer is read whole.
const checkpointChunk = 64 << 10

// maxCheckpointBytes answers the largest checkpoint file the store writes
// for a session of segs segment files: one stamp per segment at most, and
// a payload whose length field is 32 bits.
func maxCheckpointBytes(segs int) int64 {
	return checkpointFixed + 16*int64(segs) + 8 + 4 + math.MaxUint32
}

// readCheckpointFile reads and decodes s's checkpoint, a session of segs
// segment files, checksum included; with payload, the payload is read
// into memory and answered, otherwise it is only run through the
// checksum, in pieces. A file larger than the store writes for so many
// segments, or whose length is not the one its header gives, is malformed
// (an error wrapping errBadCheckpoint) and not read any further: what
// stands there is no checkpoint of the store's, however large. s.ckMu is
// taken, so that no checkpoint is being written over it meanwhile.
func readCheckpointFile(s *session, segs int, payload bool) (checkpointFile, error) {
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	var cp checkpointFile
	f, err := openRegular(filepath.Join(s.dir, checkpointName))
	if err != nil {
		return cp, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return cp, err
	}
	size := fi.Size()
	if size > maxCheckpointBytes(segs) {
		return cp, fmt.Errorf("%w: %d bytes, more than a checkpoint of %d segments holds", errBadCheckpoint, size, segs)
	}
	if size <= checkpointChunk {
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return cp, checkpointReadErr(err)
		}
		if cp, err = decodeCheckpoint(b); err == nil && len(cp.stamps) > segs {
			return cp, fmt.Errorf("%w: %d stamps for %d segments", errBadCheckpoint, len(cp.stamps), segs)
		}
		return cp, err
	}
	fixed := make([]byte, checkpointFixed)
	if _, err := f.ReadAt(fixed, 0); err != nil {
		return cp, checkpointReadErr(err)
	}
	n := int64(binary.LittleEndian.Uint32(fixed[20:]))
	if n > int64(segs) {
		return cp, fmt.Errorf("%w: %d stamps for %d segments", errBadCheckpoint, n, segs)
	}
	head := make([]byte, min(size, checkpointFixed+16*n+8+4))
	if _, err := f.ReadAt(head, 0); err != nil {
		return cp, checkpointReadErr(err)
	}
	cp, at, err := decodeCheckpointHead(head)
	if err != nil {
		return cp, err
	}
	if plen := int64(binary.LittleEndian.Uint32(head[at-4:])); int64(at)+plen != size {
		return cp, fmt.Errorf("%w: payload length %d, %d bytes left", errBadCheckpoint, plen, size-int64(at))
	}
	if payload {
		// Its length checks out: the file is as long as a checkpoint
		// the store wrote.
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return cp, checkpointReadErr(err)
		}
		return decodeCheckpoint(b)
	}
	sum := crc32.Checksum(head[12:at], castagnoli)
	buf := make([]byte, checkpointChunk)
	for off := int64(at); off < size; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		sum = crc32.Update(sum, castagnoli, buf[:k])
		off += int64(k)
		if err != nil && off < size {
			return cp, checkpointReadErr(err)
		}
	}
	if sum != binary.LittleEndian.Uint32(head[8:]) {
		return cp, fmt.Errorf("%w: checksum mismatch", errBadCheckpoint)
	}
	return cp, nil
}

// checkpointReadErr answers a read that ended early, the file having shrunk under
// it, as a malformed checkpoint.
func checkpointReadErr(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: shorter than its length", errBadCheckpoint)
	}
	return err
}

// overwriteFile writes parts, one after the other, over path's bytes from
// its start, cuts the file to their length and flushes nothing; it creates
// path when missing. The file keeps its inode: there is no temporary file
// to create, no rename and no old inode to free, which on ext4 also starts
// the new file's writeback at once (auto_da_alloc). A reader in this
// process waits for the write (s.ckMu). A crash, a kill in the middle of
// the write or a write that fails (a full disk) may leave a file with old
// and new bytes mixed, as a crash may leave new bytes that did not all
// reach the disk: a checkpoint's checksum refuses either, and the session
// is read from its journal.
//
// What stands at path and is not a regular file (a symbolic link, a
// named pipe, a device) is removed first: it is never written through.
func overwriteFile(path string, parts ...[]byte) (err error) {
	f, err := openOverwrite(path)
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("journal: write %s: %w", path, cerr)
		}
	}()
	var off int64
	for _, data := range parts {
		n, err := f.WriteAt(data, off)
		off += int64(n)
		if err != nil {
			return fmt.Errorf("journal: write %s: %w", path, err)
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	if fi.Size() > off {
		if err := f.Truncate(off); err != nil {
			return fmt.Errorf("journal: write %s: %w", path, err)
		}
	}
	return nil
}

// openOverwrite opens the regular file path for writing, creating it when
// missing; anything else at path is removed and a regular file created
// in its place. It never follows a symbolic link and never waits for a
// reader of a named pipe.
func openOverwrite(path string) (*os.File, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|oNoFollow|oNonBlock, 0o600)
		if err == nil {
			fi, serr := f.Stat()
			if serr != nil {
				f.Close()
				return nil, serr
			}
			if fi.Mode().IsRegular() {
				return f, nil
			}
			f.Close()
		} else if fi, lerr := os.Lstat(path); lerr != nil || fi.Mode().IsRegular() || fi.IsDir() {
			return nil, err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: %w", path, errNotRegular)
}

// writeFileAtomic replaces path with data via a temporary file, fsync,
// rename and directory fsync.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("journal: write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}
