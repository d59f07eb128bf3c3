package journal

import (
	"errors"
	"io"
	"os"
	"sync/atomic"
)

// readChunk is the unit in which a reopen reads a segment it keeps: each
// chunk is checked while the next one is read.
const readChunk = 256 << 10

// readChecked reads bytes [0, size) of f into one buffer and checks them
// with checkKept. A segment of two chunks or more is read by a goroutine
// chunk by chunk while the caller checks each chunk as it comes in, so that
// the check runs beside the copy from the page cache instead of after it;
// every byte is still read from the file once and checked once. It answers
// the buffer, the check and its error as checkKept does, or rerr when the
// file could not be read through size (the check's answer is then
// meaningless).
func readChecked(f *os.File, size int64, expect uint64, maxPayload, si int, lastMs int64, index []indexEntry) (b []byte, c keptCheck, err, rerr error) {
	return readCheckedBy(readChunk, f, size, expect, maxPayload, si, lastMs, index)
}

// readCheckedBy is readChecked in chunks of the given size.
func readCheckedBy(chunk int64, f io.ReaderAt, size int64, expect uint64, maxPayload, si int, lastMs int64, index []indexEntry) (b []byte, c keptCheck, err, rerr error) {
	b = make([]byte, size)
	if size < 2*chunk {
		if n, err := f.ReadAt(b, 0); int64(n) < size {
			return nil, keptCheck{}, nil, readErr(err)
		}
		c, err = checkKept(b, expect, maxPayload, si, lastMs, index)
		return b, c, err, nil
	}
	avail := make(chan int, size/chunk+1) // never blocks the reader
	var stop atomic.Bool
	go func() {
		defer close(avail)
		for off := int64(0); off < size && !stop.Load(); {
			end := min(off+chunk, size)
			n, err := f.ReadAt(b[off:end], off)
			if off += int64(n); off < end {
				rerr = readErr(err) // published by close(avail)
				return
			}
			avail <- int(off)
		}
	}()
	c = keptCheck{next: expect, lastMs: lastMs, index: index}
	from := 0
	for n := range avail {
		if err != nil {
			continue // the reader is stopping; wait for it
		}
		c, err = checkKeptAt(b[:n], from, c.next, maxPayload, si, c.lastMs, c.index)
		if n < int(size) && (err == nil || errors.Is(err, errShortFrame)) {
			// The frame at c.end goes on in the next chunk.
			from, err = int(c.end), nil
			continue
		}
		if err != nil {
			stop.Store(true)
		}
	}
	if rerr != nil {
		return nil, keptCheck{}, nil, rerr
	}
	return b, c, err, nil
}
