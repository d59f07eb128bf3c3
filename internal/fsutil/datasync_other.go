//go:build !linux

package fsutil

import "os"

// datasync flushes f with os.File.Sync where fdatasync(2) is missing (on
// macOS that is fcntl F_FULLFSYNC, a flush of the drive's cache too).
func datasync(f *os.File, _ int) error { return f.Sync() }
