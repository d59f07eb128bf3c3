//go:build !linux

package workspace

// birthTime is 0 where creation times are not read: identity falls back
// to device and inode.
func birthTime(string) int64 { return 0 }
