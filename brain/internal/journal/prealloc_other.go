//go:build !linux

package journal

import "os"

// preallocate is not done on this platform: log files grow with their
// writes.
func preallocate(f *os.File, n int64) bool { return false }
