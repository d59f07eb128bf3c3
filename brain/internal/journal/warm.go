package journal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync/atomic"
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
	next   uint64 // the sequence after the kept prefix
	bytes  int64
	budget *atomic.Int64
}

// warmSeg holds bytes [0, len(b)) of the segment whose first record is
// first, every frame in them checked.
type warmSeg struct {
	first uint64
	b     []byte
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

// checkWarmFrame checks the frame at the start of b as frameScanner.next does
// and answers its payload and size.
func checkWarmFrame(b []byte, maxPayload int) ([]byte, int, error) {
	if len(b) < frameHeaderSize {
		return nil, 0, errShortFrame
	}
	n := int64(binary.LittleEndian.Uint32(b))
	if n > int64(maxPayload) {
		return nil, 0, fmt.Errorf("%w: %d bytes", errFrameSize, n)
	}
	if n > int64(len(b)-frameHeaderSize) {
		return nil, 0, errShortFrame
	}
	size := frameHeaderSize + int(n)
	p := b[frameHeaderSize:size]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errChecksum
	}
	return p, size, nil
}
