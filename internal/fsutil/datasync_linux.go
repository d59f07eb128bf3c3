//go:build linux

package fsutil

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2) of fd, f's descriptor.
func datasync(_ *os.File, fd int) error { return syscall.Fdatasync(fd) }
