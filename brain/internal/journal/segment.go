package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
)

const (
	segmentSuffix  = ".segment"
	segmentNameLen = 20
	readBufferSize = 256 << 10
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

// frameReader reads consecutive frames of one segment file.
type frameReader struct {
	r          *bufio.Reader
	off        int64 // offset of the next frame
	limit      int64 // bytes of the segment that may be read
	maxPayload int
	buf        []byte
}

func newFrameReader(f *os.File, off, limit int64, maxPayload int) (*frameReader, error) {
	if off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	size := readBufferSize
	if rem := limit - off; rem < int64(size) {
		size = max(int(rem), 16)
	}
	return &frameReader{
		r:          bufio.NewReaderSize(io.LimitReader(f, limit-off), size),
		off:        off,
		limit:      limit,
		maxPayload: maxPayload,
	}, nil
}

// next returns the payload of the next frame (valid until the following
// call) and the frame's size. It answers io.EOF at a clean end,
// errShortFrame when the segment ends inside a frame, errChecksum for a
// complete frame whose checksum does not match and errFrameSize for a
// length above the record limit.
func (fr *frameReader) next() ([]byte, int, error) {
	rem := fr.limit - fr.off
	if rem == 0 {
		return nil, 0, io.EOF
	}
	if rem < frameHeaderSize {
		return nil, 0, errShortFrame
	}
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return nil, 0, readErr(err)
	}
	n := int64(binary.LittleEndian.Uint32(hdr[:]))
	if n > int64(fr.maxPayload) {
		return nil, 0, fmt.Errorf("%w: %d bytes", errFrameSize, n)
	}
	if n > rem-frameHeaderSize {
		return nil, 0, errShortFrame
	}
	if cap(fr.buf) < int(n) {
		fr.buf = make([]byte, n)
	}
	p := fr.buf[:n]
	if _, err := io.ReadFull(fr.r, p); err != nil {
		return nil, 0, readErr(err)
	}
	if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
		return nil, 0, errChecksum
	}
	fr.off += frameHeaderSize + n
	return p, frameHeaderSize + int(n), nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The file shrank under us; the caller's limit was wrong.
		return fmt.Errorf("journal: segment shorter than expected: %w", io.ErrUnexpectedEOF)
	}
	return err
}
