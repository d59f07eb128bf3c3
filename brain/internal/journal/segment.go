package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

const (
	segmentSuffix  = ".segment"
	segmentNameLen = 20
)

// segmentName is the file name of the segment whose first record is first.
func segmentName(first uint64) string {
	return fmt.Sprintf("%020d%s", first, segmentSuffix)
}

// parseSegmentName returns the first sequence encoded in a segment file
// name, or false when name is not a segment name.
func parseSegmentName(name string) (uint64, bool) {
	stem, ok := strings.CutSuffix(name, segmentSuffix)
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

// Read buffers: one sequential pread per chunk, starting small and
// doubling so that short reads stay cheap and long scans make few calls.
const (
	minReadChunk = 64 << 10
	maxReadChunk = 1 << 20
)

var readBufs = sync.Pool{New: func() any { b := make([]byte, maxReadChunk); return &b }}

// frameScanner reads consecutive frames of one segment file with
// positional reads into one buffer; payloads alias that buffer.
type frameScanner struct {
	f          *os.File
	off        int64 // file offset of the next frame
	limit      int64 // bytes of the segment that may be read
	maxPayload int
	pooled     *[]byte
	buf        []byte // buf[:len] holds file bytes from base on
	base       int64
	chunk      int
}

func newFrameScanner(f *os.File, off, limit int64, maxPayload int) *frameScanner {
	return &frameScanner{f: f, off: off, limit: limit, maxPayload: maxPayload, base: off, chunk: minReadChunk}
}

// release returns the buffer; payloads returned before are invalid after.
func (sc *frameScanner) release() {
	if sc.pooled != nil && cap(sc.buf) == maxReadChunk {
		*sc.pooled = sc.buf[:0]
		readBufs.Put(sc.pooled)
	}
	sc.pooled, sc.buf = nil, nil
}

// fill makes at least need bytes from sc.off available in sc.buf. The
// first fill takes a pooled buffer, or when no more than minReadChunk
// bytes are left to read (one frame at a checkpoint's end, a short
// tail), a buffer of just that size: a pooled one is 1 MiB, and the pool
// is emptied by every garbage collection.
func (sc *frameScanner) fill(need int) error {
	if sc.buf == nil {
		if rem := sc.limit - sc.off; rem <= minReadChunk {
			sc.buf = make([]byte, 0, max(int(rem), need))
		} else {
			sc.pooled = readBufs.Get().(*[]byte)
			sc.buf = (*sc.pooled)[:0]
		}
	}
	rel := int(sc.off - sc.base)
	if len(sc.buf)-rel >= need {
		return nil
	}
	// Keep the unread bytes, at the front of a buffer big enough.
	have := copy(sc.buf[:cap(sc.buf)], sc.buf[rel:])
	if cap(sc.buf) < need {
		nb := make([]byte, need)
		copy(nb, sc.buf[:have])
		sc.buf = nb[:0]
	}
	sc.base = sc.off
	want := max(need, min(sc.chunk, cap(sc.buf)))
	if rem := sc.limit - sc.off; int64(want) > rem {
		want = int(rem)
	}
	sc.chunk = min(sc.chunk*2, maxReadChunk)
	n, err := sc.f.ReadAt(sc.buf[have:want], sc.off+int64(have))
	sc.buf = sc.buf[:have+n]
	if have+n < need {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return readErr(err)
	}
	return nil
}

// next returns the offset of the next frame, its payload (valid until the
// following call) and the frame's size. It answers io.EOF at a clean end,
// errShortFrame when the segment ends inside a frame, errChecksum for a
// complete frame whose checksum does not match and errFrameSize for a
// length above the record limit.
func (sc *frameScanner) next() (int64, []byte, int, error) {
	at := sc.off
	rem := sc.limit - at
	if rem == 0 {
		return at, nil, 0, io.EOF
	}
	if rem < frameHeaderSize {
		return at, nil, 0, errShortFrame
	}
	if err := sc.fill(frameHeaderSize); err != nil {
		return at, nil, 0, err
	}
	rel := int(at - sc.base)
	hdr := sc.buf[rel : rel+frameHeaderSize]
	n := int64(binary.LittleEndian.Uint32(hdr))
	if n > int64(sc.maxPayload) {
		return at, nil, 0, fmt.Errorf("%w: %d bytes", errFrameSize, n)
	}
	if n > rem-frameHeaderSize {
		return at, nil, 0, errShortFrame
	}
	size := frameHeaderSize + int(n)
	if err := sc.fill(size); err != nil {
		return at, nil, 0, err
	}
	rel = int(at - sc.base)
	frame := sc.buf[rel : rel+size]
	p := frame[frameHeaderSize:]
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(frame[4:]) {
		return at, nil, 0, errChecksum
	}
	sc.off += int64(size)
	return at, p, size, nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The file shrank under us; the caller's limit was wrong.
		return fmt.Errorf("journal: segment shorter than expected: %w", io.ErrUnexpectedEOF)
	}
	return err
}
