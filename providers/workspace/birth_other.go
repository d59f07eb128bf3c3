//go:build !linux

package workspace

// birthTime is 0 where creation times are not read: identity rests on
// the inode number alone.
func birthTime(string) int64 { return 0 }
