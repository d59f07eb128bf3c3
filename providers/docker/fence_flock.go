//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package docker

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// flockFile locks the whole file at path (created if need be), shared or
// exclusive, without waiting: errFenceBusy when another holder has it.
// Like an open file description lock, a flock belongs to the open file:
// two opens in one process conflict as two processes do, and the lock
// ends with the descriptor, a holder that dies included; the descriptor
// is not inherited by children.
func flockFile(path string, exclusive bool) (func(), error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(fd, how|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errFenceBusy
		}
		return nil, fmt.Errorf("lock %s: %w", path, os.NewSyscallError("flock", err))
	}
	return func() { _ = unix.Close(fd) }, nil
}
