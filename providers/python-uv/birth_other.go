//go:build !linux

package pythonuv

// birthTime is 0: creation times are not read on this system.
func birthTime(string) int64 { return 0 }
