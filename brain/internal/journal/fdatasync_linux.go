//go:build linux

package journal

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data and the metadata needed to read it back.
func fdatasync(f *os.File) error { return onFD(f, syscall.Fdatasync) }
