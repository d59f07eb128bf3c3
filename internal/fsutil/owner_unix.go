//go:build unix

package fsutil

import (
	"io/fs"
	"os"
	"syscall"
)

// CheckOwner refuses fi, the file at path, unless the process's effective
// user owns it: whoever owns a key or a directory of credentials may make
// it readable, or swap it, at any time. The error names path and the
// chown that puts it right, and wraps ErrForeignOwner. Where the system
// does not say who owns a file, it is taken.
func CheckOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return &ownerError{path: path, uid: st.Uid, euid: euid}
	}
	return nil
}
