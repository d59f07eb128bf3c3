package docker

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockRange locks one byte at off of the file at path (created if need
// be), shared or exclusive, without waiting: errFenceBusy when another
// holder has it. Open file description locks conflict between two opens
// of the file in one process as between two processes, and end with the
// descriptor, a holder that dies included; the descriptor is not
// inherited by children.
func lockRange(path string, off int64, exclusive bool) (func(), error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: off, Len: 1}
	if exclusive {
		lk.Type = unix.F_WRLCK
	}
	if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, errFenceBusy
		}
		return nil, fmt.Errorf("lock %s: %w", path, os.NewSyscallError("fcntl", err))
	}
	return func() { _ = unix.Close(fd) }, nil
}
