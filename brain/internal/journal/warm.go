package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"
	"unsafe"
)

// maxWarmBytes bounds the bytes all sessions of a store keep from the
// verification of a checkpoint's prefix for the Reads that follow it.
const maxWarmBytes = 16 << 20

// warmSet is the prefix of a session's journal that a Read had to verify
// in full (the prefix a checkpoint vouched for at open): the segment bytes
// read and checked then, kept so that the pages after it are served from
// memory instead of being read and checked a second time. It is dropped
// once a Read passed its end, and with the session's index. s.mu guards it.
type warmSet struct {
	segs   []warmSeg
	next   uint64     // the sequence after the kept prefix
	at     indexEntry // where the page after the last one served from segs starts
	bytes  int64
	budget *atomic.Int64
}

// warmSeg holds bytes [0, len(b)) of the segment whose first record is
// first: the n frames in them are checked.
type warmSeg struct {
	first uint64
	n     uint64
	b     []byte
}

// setKept decodes payload p, which checkKept accepted in bytes that are
// never written again, into r (zero): Kind, Data and Origin are slices of
// p, not copies. p's capacity is its length, so that Origin's is too.
func setKept(r *Record, p []byte) {
	kindEnd := payloadFixed + int(binary.LittleEndian.Uint16(p[18:]))
	dataEnd := kindEnd + int(binary.LittleEndian.Uint32(p[20:]))
	r.Sequence = binary.LittleEndian.Uint64(p[2:])
	r.RecordedAtMs = int64(binary.LittleEndian.Uint64(p[10:]))
	// A checked payload's kind is never empty.
	r.Kind = unsafe.String(&p[payloadFixed], kindEnd-payloadFixed)
	if dataEnd > kindEnd {
		r.Data = p[kindEnd:dataEnd:dataEnd]
	}
	if p[1] != 0 { // flagOrigin, the only flag
		r.Origin = p[dataEnd+4:]
	}
}

// warmPage answers the page of records after `after` that Read would build
// (at most maxRecords, at most maxBytes of frames unless the first frame
// alone is larger, none past last) from the kept bytes of s.warm, and
// whether they hold it: the page must start where one of their segments
// or the page served before it ends, and end within that segment's kept
// frames. The page's records are decoded straight into one slice of
// exactly their number. A page through the end of the kept prefix drops
// it. s.mu is held.
func (s *session) warmPage(after, last uint64, maxRecords, maxBytes int) ([]Record, bool) {
	w := s.warm
	if w == nil || after >= last {
		return nil, false
	}
	si := len(w.segs) - 1
	for si >= 0 && w.segs[si].first > after+1 {
		si--
	}
	if si < 0 {
		return nil, false
	}
	ws := &w.segs[si]
	var off int
	switch {
	case after+1 == ws.first:
	case w.at.seq == after+1 && w.at.seg == si:
		off = int(w.at.off)
	default:
		return nil, false
	}
	i := after + 1 - ws.first
	if i >= ws.n {
		return nil, false
	}
	n := min(ws.n-i, uint64(maxRecords), last-after)
	if i+n == ws.n && after+n < last && n < uint64(maxRecords) {
		// The page goes on past these frames.
		return nil, false
	}
	out := make([]Record, n)
	b := ws.b
	bytes := 0
	for k := range out {
		size := frameHeaderSize + int(binary.LittleEndian.Uint32(b[off:]))
		if k > 0 && bytes+size > maxBytes {
			out = out[:k:k]
			break
		}
		bytes += size
		setKept(&out[k], b[off+frameHeaderSize:off+size:off+size])
		off += size
	}
	end := after + uint64(len(out))
	w.at = indexEntry{seq: end + 1, seg: si, off: int64(off)}
	if end < last {
		s.hint = w.at
	}
	if end+1 >= w.next {
		s.warm = nil
		w.release()
	}
	return out, true
}

// reserveWarm takes n bytes of the store's warm budget; it answers nil
// when they do not fit.
func (fs *FileStore) reserveWarm(n int64) *warmSet {
	if n <= 0 || n > maxWarmBytes {
		return nil
	}
	if fs.warmBytes.Add(n) > maxWarmBytes {
		fs.warmBytes.Add(-n)
		return nil
	}
	return &warmSet{bytes: n, budget: &fs.warmBytes}
}

// growWarm takes n more bytes of the budget for w; it answers false when
// they do not fit (or w is nil).
func (fs *FileStore) growWarm(w *warmSet, n int64) bool {
	if w == nil || w.budget == nil || n <= 0 {
		return false
	}
	if fs.warmBytes.Add(n) > maxWarmBytes {
		fs.warmBytes.Add(-n)
		return false
	}
	w.bytes += n
	return true
}

// give gives n of the set's bytes back to the budget: bytes it took and
// does not keep.
func (w *warmSet) give(n int64) {
	if w != nil && w.budget != nil {
		w.bytes -= n
		w.budget.Add(-n)
	}
}

// release gives the set's bytes back to the budget.
func (w *warmSet) release() {
	if w != nil && w.budget != nil {
		w.budget.Add(-w.bytes)
		w.budget = nil
	}
}

// seg answers the kept bytes of the segment starting at first.
func (w *warmSet) seg(first uint64) []byte {
	if w == nil {
		return nil
	}
	for _, ws := range w.segs {
		if ws.first == first {
			return ws.b
		}
	}
	return nil
}

// seqError says a frame that checks out holds the wrong sequence.
type seqError struct{ got, want uint64 }

func (e *seqError) Error() string {
	return fmt.Sprintf("record has sequence %d, want %d (sequences are not dense)", e.got, e.want)
}

// keptCheck is what checkKept found.
type keptCheck struct {
	end    int64        // offset just past the last frame that checked out
	next   uint64       // the sequence after that frame
	lastMs int64        // the largest recorded_at_ms seen, or the one given
	index  []indexEntry // the index given, with entries for the frames checked
}

// checkKept checks the frames of b, which holds bytes [0, len(b)) of
// segment si, in order with the recovery rules (length, checksum,
// payload, sequences dense from expect on), each byte read once, and adds
// sparse index entries for them as session.addIndex would. It stops at the
// first frame that does not check out (c.end is its offset) and answers
// why: errShortFrame when b ends inside it, errFrameSize, errChecksum,
// errBadPayload (wrapped) or a *seqError.
func checkKept(b []byte, expect uint64, maxPayload int, si int, lastMs int64, index []indexEntry) (c keptCheck, err error) {
	return checkKeptAt(b, 0, expect, maxPayload, si, lastMs, index)
}

// checkKeptAt is checkKept for the frames of b from offset from on, the
// bytes before it having checked out, with expect the sequence of the
// frame at from.
func checkKeptAt(b []byte, from int, expect uint64, maxPayload int, si int, lastMs int64, index []indexEntry) (c keptCheck, err error) {
	c = keptCheck{next: expect, lastMs: lastMs, index: slices.Grow(index, (len(b)-from)/indexEveryBytes+1)}
	lastIdx := int64(-1) // offset of the last index entry in segment si
	if n := len(index); n > 0 && index[n-1].seg == si {
		lastIdx = index[n-1].off
	}
	// Frames are taken three at a time so that their checksums run side by
	// side (checksum3); each is then judged in order, so the first frame
	// that does not check out is the one reported.
	var at [3]int
	var p [3][]byte
	var sum [3]uint32
	off := from
	defer func() { c.end = int64(off) }()
	// The common case first: three complete frames that check out. At
	// anything else the general loop below takes over at the first of
	// them and judges it frame by frame.
	next, ms := c.next, c.lastMs
	for {
		n0 := uint64(u32At(b, off))
		o1 := off + frameHeaderSize + int(n0)
		if n0 > uint64(maxPayload) || o1 < off || o1+frameHeaderSize > len(b) {
			break
		}
		n1 := uint64(u32At(b, o1))
		o2 := o1 + frameHeaderSize + int(n1)
		if n1 > uint64(maxPayload) || o2 < o1 || o2+frameHeaderSize > len(b) {
			break
		}
		n2 := uint64(u32At(b, o2))
		end := o2 + frameHeaderSize + int(n2)
		if n2 > uint64(maxPayload) || end < o2 || end > len(b) {
			break
		}
		p0, p1, p2 := b[off+frameHeaderSize:o1], b[o1+frameHeaderSize:o2], b[o2+frameHeaderSize:end]
		s0, s1, s2 := checksum3(p0, p1, p2)
		if s0 != u32At(b, off+4) || s1 != u32At(b, o1+4) || s2 != u32At(b, o2+4) ||
			!payloadOK(p0) || !payloadOK(p1) || !payloadOK(p2) ||
			binary.LittleEndian.Uint64(p0[2:]) != next || binary.LittleEndian.Uint64(p1[2:]) != next+1 || binary.LittleEndian.Uint64(p2[2:]) != next+2 {
			break
		}
		for _, o := range [3]int{off, o1, o2} {
			if o == 0 || lastIdx < 0 || int64(o)-lastIdx >= indexEveryBytes {
				c.index = append(c.index, indexEntry{seq: next, seg: si, off: int64(o)})
				lastIdx = int64(o)
			}
			next++
		}
		ms = max(ms, int64(binary.LittleEndian.Uint64(p0[10:])), int64(binary.LittleEndian.Uint64(p1[10:])), int64(binary.LittleEndian.Uint64(p2[10:])))
		off = end
	}
	c.next, c.lastMs = next, ms
	for off < len(b) {
		// Delimit up to three frames; stop at one whose header is wrong
		// and judge it after those before it.
		var stop error
		k := 0
		for next := off; k < 3 && next < len(b); k++ {
			rest := b[next:]
			if len(rest) < frameHeaderSize {
				stop = errShortFrame
				break
			}
			n := uint64(binary.LittleEndian.Uint32(rest))
			if n > uint64(maxPayload) {
				stop = fmt.Errorf("%w: %d bytes", errFrameSize, n)
				break
			}
			if n > uint64(len(rest)-frameHeaderSize) {
				stop = errShortFrame
				break
			}
			at[k], p[k] = next, rest[frameHeaderSize:frameHeaderSize+int(n)]
			next += frameHeaderSize + int(n)
		}
		switch k {
		case 3:
			sum[0], sum[1], sum[2] = checksum3(p[0], p[1], p[2])
		case 2:
			sum[0], sum[1] = crc32.Checksum(p[0], castagnoli), crc32.Checksum(p[1], castagnoli)
		case 1:
			sum[0] = crc32.Checksum(p[0], castagnoli)
		}
		for i := range k {
			pl := p[i]
			if sum[i] != binary.LittleEndian.Uint32(b[at[i]+4:]) {
				return c, errChecksum
			}
			if !payloadOK(pl) {
				_, err := parsePayload(pl)
				return c, err
			}
			if seq := binary.LittleEndian.Uint64(pl[2:]); seq != c.next {
				return c, &seqError{got: seq, want: c.next}
			}
			if o := int64(off); o == 0 || lastIdx < 0 || o-lastIdx >= indexEveryBytes {
				c.index = append(c.index, indexEntry{seq: c.next, seg: si, off: o})
				lastIdx = o
			}
			c.lastMs = max(c.lastMs, int64(binary.LittleEndian.Uint64(pl[10:])))
			c.next++
			off += frameHeaderSize + len(pl)
		}
		if stop != nil {
			return c, stop
		}
	}
	return c, nil
}

// u32At answers the little-endian uint32 at b[i:], or 0 when fewer
// than 4 bytes are left there.
func u32At(b []byte, i int) uint32 {
	if i < 0 || i > len(b)-4 {
		return 0
	}
	return binary.LittleEndian.Uint32(b[i:])
}
