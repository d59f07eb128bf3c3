package workspace

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// markAttr is the extended attribute holding a workspace directory's
// mark; a test names one the kernel refuses, to start the provider as on
// a file system that keeps no extended attributes.
var markAttr = "user.brain.workspace"

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

// fileHandle is the file handle of the directory at path (not followed
// if a link), as name_to_handle_at(2) gives it: its type and bytes in hex.
// It is "" where the file system gives none. The mount id it also
// answers is not kept: it changes with every mount.
func fileHandle(path string) string {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%x", h.Type(), h.Bytes())
}
