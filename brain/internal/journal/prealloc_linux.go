//go:build linux

package journal

import (
	"os"
	"syscall"
)

// preallocate reserves the first n bytes of f, a new empty file, and sets
// its size to n (fallocate(2), mode 0: the blocks read as zero until
// written). It answers whether it did; on any failure (a file system
// without fallocate, too little space) f is left empty and grows with its
// writes.
func preallocate(f *os.File, n int64) bool {
	if err := onFD(f, func(fd int) error { return syscall.Fallocate(fd, 0, 0, n) }); err != nil {
		_ = f.Truncate(0) // a failure may have reserved part of the range
		return false
	}
	return true
}
