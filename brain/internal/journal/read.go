package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Read implements Store.
func (fs *FileStore) Read(ctx context.Context, id string, after uint64, maxRecords, maxBytes int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := fs.read(id, after, maxRecords, maxBytes)
	var de *DamagedError
	if errors.As(err, &de) && fs.repairForRead(id) {
		return fs.read(id, after, maxRecords, maxBytes)
	}
	return out, err
}

// repairForRead repairs id's segments from the commit log when no append
// of it is queued (see repairFromLogs), and reports whether it rewrote
// anything.
func (fs *FileStore) repairForRead(id string) bool {
	s, err := fs.readySession(id)
	if err != nil {
		return false
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	if s.inflight > 0 {
		return false
	}
	n, err := fs.repairFromLogs(id)
	if err != nil || n == 0 {
		return false
	}
	// The index and any kept bytes stay valid: the repair wrote the
	// acknowledged frames back where they were.
	return true
}

// read is one attempt of Read.
func (fs *FileStore) read(id string, after uint64, maxRecords, maxBytes int) ([]Record, error) {
	maxRecords, maxBytes = pageLimits(maxRecords, maxBytes)
	s, err := fs.readySessionKeep(id, after == 0)
	if err != nil {
		return nil, err
	}
	defer fs.release(s)
	last := s.committedNext - 1
	if after >= last {
		s.mu.Unlock()
		return nil, nil
	}
	if s.cold.seq != 0 && after+1 < s.cold.seq {
		if err := fs.verifyColdKeep(s, true); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	if out, ok := s.warmPage(after, last, maxRecords, maxBytes); ok {
		s.mu.Unlock()
		return out, nil
	}
	segs := slices.Clone(s.segs)
	warm := s.warm
	start := s.seek(after + 1)
	epoch := s.epoch
	s.mu.Unlock()

	pg := newPage(min(uint64(maxRecords), last-after))
	pg.after, pg.last, pg.maxRecords, pg.maxBytes = after, last, maxRecords, maxBytes
	for si := start.seg; si < len(segs); si++ {
		off := int64(0)
		if si == start.seg {
			off = start.off
		}
		done, err := fs.readSegment(s, si, segs[si], warm.seg(segs[si].first), off, pg)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if pg.hint.seq != 0 {
		// Where the next page starts is remembered so that paging through
		// a session does not rescan from an index point.
		s.mu.Lock()
		if s.epoch == epoch {
			s.hint = pg.hint
		}
		s.mu.Unlock()
	}
	if warm != nil && len(pg.out) > 0 {
		// A page past the warm prefix drops it: the reader has moved on.
		end := pg.out[len(pg.out)-1].Sequence
		s.mu.Lock()
		if s.warm == warm && s.epoch == epoch && end+1 >= warm.next {
			s.warm = nil
			warm.release()
		}
		s.mu.Unlock()
	}
	return pg.out, nil
}

// page builds the records of one Read: the byte fields of its records are
// copied into shared arenas (or are slices of kept bytes) and equal kinds
// share one string, so a page costs a few allocations rather than several
// per record.
type page struct {
	out      []Record
	bytes    int
	arena    []byte
	kinds    map[string]string
	lastKind string

	after, last          uint64 // the Read's records are after..last
	maxRecords, maxBytes int
	hint                 indexEntry // where the next page starts, when a bound stopped this one
}

const pageArenaBytes = 32 << 10

func newPage(records uint64) *page {
	return &page{out: make([]Record, 0, records)}
}

// take adds the record of the frame at `at` of segment si (payload p, n
// bytes) unless the page is full, and reports whether the page is done.
// kept says p lies in bytes a verification checked and kept: they are
// never written again, so p is not checked a second time and the record's
// byte fields are slices of it.
func (pg *page) take(si int, at int64, p []byte, n int, kept bool) (bool, error) {
	if len(pg.out) > 0 && pg.bytes+n > pg.maxBytes {
		pg.hint = indexEntry{seq: leUint64(p[2:]), seg: si, off: at}
		return true, nil
	}
	var seq uint64
	if kept {
		seq = pg.addKept(p, n)
	} else {
		var err error
		if seq, err = pg.add(p, n); err != nil {
			return true, err
		}
	}
	if seq >= pg.last {
		return true, nil
	}
	if len(pg.out) >= pg.maxRecords {
		pg.hint = indexEntry{seq: seq + 1, seg: si, off: at + int64(n)}
		return true, nil
	}
	return false, nil
}

// add decodes payload p (a frame of n bytes) into the page, copying its
// byte fields.
func (pg *page) add(p []byte, n int) (uint64, error) {
	v, err := parsePayload(p)
	if err != nil {
		return 0, err
	}
	r := Record{Sequence: v.seq, RecordedAtMs: v.ms, Kind: pg.kind(v.kind)}
	if v.data != nil {
		r.Data = pg.copy(v.data)
	}
	if v.hasOrigin {
		r.Origin = pg.copy(v.origin)
	}
	pg.bytes += n
	pg.out = append(pg.out, r)
	return v.seq, nil
}

// addKept is add for a payload checkKept accepted: it reads the fields
// where that check found them, straight into the page's next record.
func (pg *page) addKept(p []byte, n int) uint64 {
	if len(pg.out) == cap(pg.out) {
		pg.out = append(pg.out, Record{})
	} else {
		pg.out = pg.out[:len(pg.out)+1]
	}
	// The slot was never written: it is zero already.
	r := &pg.out[len(pg.out)-1]
	setKept(r, p)
	pg.bytes += n
	return r.Sequence
}

// copy returns a copy of b (non-nil, capacity capped) from the arena.
func (pg *page) copy(b []byte) []byte {
	if len(b) > cap(pg.arena)-len(pg.arena) {
		pg.arena = make([]byte, 0, max(pageArenaBytes, len(b)))
	}
	at := len(pg.arena)
	pg.arena = append(pg.arena, b...)
	return pg.arena[at : at+len(b) : at+len(b)]
}

// kind returns b as a string shared by every equal kind of the page.
func (pg *page) kind(b []byte) string {
	if string(b) == pg.lastKind {
		return pg.lastKind
	}
	k, ok := pg.kinds[string(b)]
	if !ok {
		k = string(b)
		if pg.kinds == nil {
			pg.kinds = make(map[string]string)
		}
		if len(pg.kinds) < 256 {
			pg.kinds[k] = k
		}
	}
	pg.lastKind = k
	return k
}

// readSegment adds to pg the frames of seg (the si-th segment) from off on
// whose sequence is after pg.after, until the page is done or the
// committed end is reached. warm holds the segment's kept bytes, if any.
func (fs *FileStore) readSegment(s *session, si int, seg segInfo, warm []byte, off int64, pg *page) (bool, error) {
	path := func() string { return filepath.Join(s.dir, "journal", segmentName(seg.first)) }
	// Frames kept by a verification are already checked.
	for off < int64(len(warm)) {
		n := int(binary.LittleEndian.Uint32(warm[off:]))
		size := frameHeaderSize + n
		p := warm[off+frameHeaderSize : off+int64(size) : off+int64(size)]
		seq := leUint64(p[2:])
		if seq > pg.last {
			return true, nil
		}
		if seq > pg.after {
			if done, _ := pg.take(si, off, p, size, true); done {
				return true, nil
			}
		}
		off += int64(size)
	}
	if off >= seg.size && seg.size > 0 && warm != nil {
		return false, nil
	}
	f, err := os.Open(path())
	if err != nil {
		return false, fmt.Errorf("journal: read %s: %w", path(), err)
	}
	defer f.Close()
	sc := newFrameScanner(f, off, seg.size, fs.opts.MaxRecordBytes)
	defer sc.release()
	for {
		at, p, n, err := sc.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fs.readDamage(s, path(), at, err)
		}
		if len(p) < payloadFixed {
			return false, fs.readDamage(s, path(), at, errBadPayload)
		}
		seq := leUint64(p[2:])
		if seq <= pg.after {
			continue
		}
		if seq > pg.last {
			return true, nil
		}
		done, err := pg.take(si, at, p, n, false)
		if err != nil {
			return false, fs.readDamage(s, path(), at, err)
		}
		if done {
			return true, nil
		}
	}
}

// readDamage reports a frame that failed to read back: committed bytes
// that no longer check out are damage (a *DamagedError); other errors
// (I/O) are wrapped as they are.
func (fs *FileStore) readDamage(s *session, path string, at int64, err error) error {
	if errors.Is(err, errChecksum) || errors.Is(err, errBadPayload) || errors.Is(err, errFrameSize) ||
		errors.Is(err, errShortFrame) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("journal: read %s: %w", path,
			&DamagedError{Session: s.id, File: path, Offset: at, Reason: err.Error()})
	}
	return fmt.Errorf("journal: read %s at offset %d: %w", path, at, err)
}
