package fsutil

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Errors of OpenRegular and ReadRegular.
var (
	// ErrNotRegular refuses a file that is not a regular file (a named
	// pipe, a device, a socket): opening or reading one could wait for
	// ever.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge refuses a file longer than its format allows.
	ErrTooLarge = errors.New("file too large")
)

// OpenRegular opens path for reading without waiting for the writer of a
// named pipe, and answers the open file with its FileInfo, taken from the
// open descriptor (so it describes what is read, not what the name held a
// moment before). What is not a regular file is refused with an error
// naming path and wrapping ErrNotRegular. A final symbolic link is
// followed.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s (mode %v): %w", path, fi.Mode(), ErrNotRegular)
	}
	return f, fi, nil
}

// ReadRegular reads the regular file path whole, refusing it (an error
// naming path and wrapping ErrTooLarge) when it holds more than max
// bytes; no more than max+1 bytes are ever read. Not a regular file is
// ErrNotRegular, as with OpenRegular; a missing file wraps
// fs.ErrNotExist.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadBounded(f, path, max)
}

// ReadBounded reads f, opened from path, to its end, refusing it (an
// error naming path and wrapping ErrTooLarge) when it holds more than
// max bytes.
func ReadBounded(f *os.File, path string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s holds more than %d bytes: %w", path, max, ErrTooLarge)
	}
	return b, nil
}
