//go:build !linux

package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// chmodDirAt gives the directory name in dir the mode mode, never
// following a symbolic link.
func chmodDirAt(dir *os.File, name string, mode uint32) error {
	return unix.Fchmodat(int(dir.Fd()), name, mode, unix.AT_SYMLINK_NOFOLLOW)
}
