package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// indexEntry is a sparse index point: record seq starts at off in segs[seg].
type indexEntry struct {
	seq uint64
	seg int
	off int64
}

// indexEveryBytes is the spacing of sparse index entries within a segment.
const indexEveryBytes = 64 << 10

// seek returns the index point at or before seq. s.mu must be held.
func (s *session) seek(seq uint64) indexEntry {
	i, found := slices.BinarySearchFunc(s.index, seq, func(e indexEntry, t uint64) int {
		switch {
		case e.seq < t:
			return -1
		case e.seq > t:
			return 1
		}
		return 0
	})
	if !found {
		i--
	}
	e := indexEntry{seq: 1}
	if i >= 0 {
		e = s.index[i]
	}
	if h := s.hint; h.seq != 0 && h.seq <= seq && h.seq > e.seq {
		e = h
	}
	return e
}

// verifyCold checks the prefix a checkpoint vouched for at open, when it
// has not been read yet (indexCold). A damaged prefix refuses the whole
// session from then on, exactly as damage found at open does: every
// later call answers its *DamagedError and nothing is appended. s.mu is
// held.
func (fs *FileStore) verifyCold(s *session) error { return fs.verifyColdKeep(s, false) }

// verifyColdKeep is verifyCold; with keep, the bytes read are kept in
// s.warm (within the store's budget) for the Reads that follow.
func (fs *FileStore) verifyColdKeep(s *session, keep bool) error {
	if s.cold.seq == 0 {
		return nil
	}
	err := fs.indexCold(s, keep)
	var de *DamagedError
	if errors.As(err, &de) {
		s.resetIndex()
		s.state, s.damage = stateDamaged, de
		return de
	}
	return err
}

// Verify opens session id and checks every frame of its journal that was
// not checked since the store opened (the prefix its checkpoint vouched
// for), so that damage there is found before anything depends on it. It
// answers the session's *DamagedError when the journal is damaged.
func (fs *FileStore) Verify(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := fs.readySession(id)
	if err != nil {
		return err
	}
	defer fs.release(s)
	defer s.mu.Unlock()
	return fs.verifyCold(s)
}

// indexCold reads the prefix a checkpoint vouched for at open, checking
// every frame as recovery would, and completes the sparse index. s.mu is
// held.
func (fs *FileStore) indexCold(s *session, keep bool) error {
	var idx []indexEntry
	expect := uint64(1)
	limitOf := func(si int) int64 {
		if si == s.cold.seg {
			return s.cold.off
		}
		return s.segs[si].size
	}
	var warm *warmSet
	if keep {
		var total int64
		for si := 0; si <= s.cold.seg; si++ {
			total += limitOf(si)
		}
		warm = fs.reserveWarm(total)
	}
	for si := 0; si <= s.cold.seg; si++ {
		seg := s.segs[si]
		limit := limitOf(si)
		path := filepath.Join(s.dir, "journal", segmentName(seg.first))
		f, err := os.Open(path)
		if err != nil {
			warm.release()
			return fmt.Errorf("journal: read %s: %w", path, err)
		}
		if warm != nil {
			// One read of the whole prefix of the segment, checked in
			// memory and kept.
			b, c, err, rerr := readChecked(f, limit, expect, fs.opts.MaxRecordBytes, si, 0, idx)
			f.Close()
			if rerr != nil {
				warm.release()
				return fs.readDamage(s, path, 0, rerr)
			}
			first := expect
			idx, expect = c.index, c.next
			if err != nil {
				var se *seqError
				if errors.As(err, &se) {
					err = fmt.Errorf("%w: sequence is not %d", errBadPayload, se.want)
				}
				warm.release()
				return fs.readDamage(s, path, c.end, err)
			}
			warm.segs = append(warm.segs, warmSeg{first: seg.first, n: c.next - first, b: b})
			continue
		}
		sc := newFrameScanner(f, 0, limit, fs.opts.MaxRecordBytes)
		for {
			at, p, _, err := sc.next()
			if err == io.EOF {
				break
			}
			if err == nil && !payloadOK(p) {
				_, err = parsePayload(p)
			}
			if err == nil && leUint64(p[2:]) != expect {
				err = fmt.Errorf("%w: sequence is not %d", errBadPayload, expect)
			}
			if err != nil {
				sc.release()
				f.Close()
				return fs.readDamage(s, path, at, err)
			}
			if n := len(idx); at == 0 || n == 0 || idx[n-1].seg != si || at-idx[n-1].off >= indexEveryBytes {
				idx = append(idx, indexEntry{seq: expect, seg: si, off: at})
			}
			expect++
		}
		sc.release()
		f.Close()
	}
	if expect != s.cold.seq {
		warm.release()
		seg := s.segs[s.cold.seg]
		path := filepath.Join(s.dir, "journal", segmentName(seg.first))
		return fmt.Errorf("journal: read %s: %w", path, &DamagedError{Session: s.id, File: path, Offset: s.cold.off,
			Reason: fmt.Sprintf("the checkpoint's prefix holds %d records, want %d", expect-1, s.cold.seq-1)})
	}
	for _, e := range s.index {
		if e.seq >= s.cold.seq {
			idx = append(idx, e)
		}
	}
	s.index = idx
	if warm != nil {
		warm.next = s.cold.seq
		s.warm.release()
		s.warm = warm
	}
	s.cold = indexEntry{}
	return nil
}

// resetIndex forgets s's segments and index. s.mu is held.
func (s *session) resetIndex() {
	s.warm.release()
	s.warm = nil
	s.segs, s.index = nil, nil
	s.hint, s.cold, s.tail = indexEntry{}, indexEntry{}, indexEntry{}
	s.epoch++
}

// addIndex records that seq starts at off in the last segment.
func (s *session) addIndex(seq uint64, off int64) {
	seg := len(s.segs) - 1
	if n := len(s.index); off == 0 || n == 0 || s.index[n-1].seg != seg || off-s.index[n-1].off >= indexEveryBytes {
		s.index = append(s.index, indexEntry{seq: seq, seg: seg, off: off})
	}
}
