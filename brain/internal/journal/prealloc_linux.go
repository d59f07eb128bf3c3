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
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Fallocate(int(fd), 0, 0, n)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil || ferr != nil {
		_ = f.Truncate(0) // a failure may have reserved part of the range
		return false
	}
	return true
}
