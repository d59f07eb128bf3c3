package workspace

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodDirAt gives the directory name in dir the mode mode, never
// following a symbolic link: with fchmodat2(2) where the kernel has it
// (Linux 6.6), else through /proc/self/fd of the directory opened as a
// path (chmodDirByPath), as the C library does.
func chmodDirAt(dir *os.File, name string, mode uint32) error {
	err := unix.Fchmodat(int(dir.Fd()), name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if !errors.Is(err, unix.EOPNOTSUPP) {
		return err
	}
	return chmodDirByPath(dir, name, mode)
}

// chmodDirByPath is chmodDirAt without fchmodat2(2). O_PATH with
// O_NOFOLLOW opens a symbolic link itself, which O_DIRECTORY then
// refuses.
func chmodDirByPath(dir *os.File, name string, mode uint32) error {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
}
