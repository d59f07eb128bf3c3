//go:build unix

package fsutil

import "syscall"

// oNonBlock keeps OpenRegular from waiting for the other end of a named
// pipe.
const oNonBlock = syscall.O_NONBLOCK
