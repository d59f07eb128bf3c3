package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errNotRegular refuses a file of the journal's that is not a regular
// file (a named pipe, a device, a socket): nothing the store writes is
// one, and opening or reading one could wait for ever.
var errNotRegular = errors.New("journal: not a regular file")

// openRegular opens path for reading. It does not wait for a writer of a
// named pipe, and refuses what is not a regular file with an error
// wrapping errNotRegular.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, errNotRegular)
	}
	return f, nil
}

// readRegular reads the regular file path whole, as os.ReadFile does,
// into a buffer sized by the file's length, but no more than max+1 bytes:
// a longer file answers its first max+1, which the caller, knowing the
// length it wants, refuses, never having read the rest.
func readRegular(path string, max int) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = int(min(fi.Size(), int64(max)))
	}
	// One byte more than the length, so that a file that did not grow
	// is read to its end without a second allocation.
	b := make([]byte, 0, size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || len(b) > max {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
