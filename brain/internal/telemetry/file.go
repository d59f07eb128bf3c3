package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unicode/utf8"
)

// DefaultMaxFileBytes is the size bound of a telemetry file.
const DefaultMaxFileBytes = 64 << 20

// errNotUTF8 refuses an entry whose record is not UTF-8: the file is.
var errNotUTF8 = errors.New("telemetry: the record is not valid UTF-8")

// File is the JSON-lines sink (see the package documentation). It is used
// from the pipeline's one writer goroutine.
type File struct {
	path string
	max  int64

	f       *os.File
	size    int64
	regular bool // f is a regular file: only then is it bounded and rotated
	torn    bool // the last write failed: the file may end in a partial line
	buf     bytes.Buffer
}

var _ Sink = (*File)(nil)

// OpenFile opens (or creates) the JSON-lines file at path, bounded by
// maxBytes (0: 64 MiB). Failing to open it is an error here; later
// failures only drop entries.
func OpenFile(path string, maxBytes int64) (*File, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFileBytes
	}
	f := &File{path: path, max: maxBytes}
	if err := f.open(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) open() error {
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("telemetry: open %s: %w", f.path, err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return fmt.Errorf("telemetry: stat %s: %w", f.path, err)
	}
	if st.IsDir() {
		fh.Close()
		return fmt.Errorf("telemetry: %s is a directory", f.path)
	}
	f.f, f.size, f.regular = fh, st.Size(), st.Mode().IsRegular()
	if f.torn && f.size > 0 && st.Mode().IsRegular() {
		// End the line a failed write may have left half-written.
		last := make([]byte, 1)
		if r, err := os.Open(f.path); err == nil {
			_, rerr := r.ReadAt(last, f.size-1)
			r.Close()
			if rerr == nil && last[0] != '\n' {
				if _, err := fh.Write([]byte("\n")); err != nil {
					f.fail()
					return fmt.Errorf("telemetry: write %s: %w", f.path, err)
				}
				f.size++
			}
		}
	}
	f.torn = false
	return nil
}

// fail closes the file after a failed write; the next Write reopens it.
func (f *File) fail() {
	if f.f != nil {
		f.f.Close()
		f.f = nil
	}
	f.torn = true
}

// Write appends e as one line, rotating the file first if the line would
// take it past its bound. A device or pipe standing in for the file is
// not rotated. An entry whose record is not UTF-8 (Accept passes none) is
// refused, the file untouched.
func (f *File) Write(_ context.Context, e Entry) error {
	f.buf.Reset()
	enc := json.NewEncoder(&f.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // Encode ends the line
		return fmt.Errorf("telemetry: encode: %w", err)
	}
	line := f.buf.Bytes()
	if !utf8.Valid(line) {
		// Only a record can hold such bytes: encoding/json writes a
		// json.RawMessage's strings as they are.
		return errNotUTF8
	}
	if int64(len(line)) > f.max {
		return fmt.Errorf("telemetry: a %d-byte line exceeds the file bound of %d bytes", len(line), f.max)
	}
	if f.f == nil {
		if err := f.open(); err != nil {
			return err
		}
	}
	if f.regular && f.size+int64(len(line)) > f.max && f.size > 0 {
		if err := f.rotate(); err != nil {
			return err
		}
	}
	n, err := f.f.Write(line)
	f.size += int64(n)
	if err != nil {
		f.fail()
		return fmt.Errorf("telemetry: write %s: %w", f.path, err)
	}
	return nil
}

// rotate renames the file to path.1 and starts a new one.
func (f *File) rotate() error {
	f.f.Close()
	f.f = nil
	if err := os.Rename(f.path, f.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.torn = true
		return fmt.Errorf("telemetry: rotate %s: %w", f.path, err)
	}
	return f.open()
}

// Close flushes the file to storage and closes it.
func (f *File) Close(context.Context) error {
	if f.f == nil {
		return nil
	}
	err := f.f.Sync()
	if errors.Is(err, syscall.EINVAL) {
		err = nil // not a regular file: a device standing in for it
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.f = nil
	if err != nil {
		return fmt.Errorf("telemetry: close %s: %w", f.path, err)
	}
	return nil
}
