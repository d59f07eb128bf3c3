package workspace

import (
	"errors"

	"golang.org/x/sys/unix"
)

// markAttr is the extended attribute holding a workspace directory's mark.
const markAttr = "user.brain.workspace"

// maxMarkLen bounds the mark read back: the provider writes 32 hex digits.
const maxMarkLen = 64

// foreignMark is read for a value longer than maxMarkLen, which is no mark
// the provider wrote: no mark equals it.
const foreignMark = "foreign"

// writeMark writes mark on the directory at path.
func writeMark(path, mark string) error {
	return unix.Lsetxattr(path, markAttr, []byte(mark), 0)
}

// readMark reads the mark of the directory at path: "" when it has none.
// It fails where the file system keeps no extended attributes or denies
// reading them.
func readMark(path string) (string, error) {
	buf := make([]byte, maxMarkLen)
	n, err := unix.Lgetxattr(path, markAttr, buf)
	switch {
	case errors.Is(err, unix.ENODATA):
		return "", nil
	case errors.Is(err, unix.ERANGE):
		return foreignMark, nil
	case err != nil:
		return "", err
	}
	return string(buf[:n]), nil
}
