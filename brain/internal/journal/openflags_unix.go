//go:build unix

package journal

import "syscall"

// Flags of the opens in regular.go: do not follow a final symbolic link,
// do not wait for the other end of a named pipe.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
