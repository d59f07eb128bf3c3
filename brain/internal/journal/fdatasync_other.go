//go:build !linux

package journal

import "os"

// fdatasync flushes f with os.File.Sync where fdatasync(2) is missing
// (on macOS that is fcntl F_FULLFSYNC, a flush of the drive's cache too).
func fdatasync(f *os.File) error { return f.Sync() }
