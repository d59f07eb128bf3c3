package datadir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// flock takes an exclusive flock(2) on f without waiting.
func flock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// lockSelf takes the exclusive flock on the data directory itself and
// answers the descriptor that holds it. Unlike .lock, the directory cannot
// be removed or replaced under a running server while it holds data, so
// a .lock deleted by hand never lets a second server in. Where the file
// system cannot lock a directory (NFS emulates flock with byte-range
// locks, which want a descriptor open for writing) it answers nil, and
// .lock alone keeps a second server out.
func lockSelf(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("datadir: open %s: %w", dir, err)
	}
	err = flock(f)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, fmt.Errorf("%w: %s is locked by another process", ErrInUse, dir)
	case errors.Is(err, syscall.EBADF), errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
		f.Close()
		return nil, nil
	default:
		f.Close()
		return nil, fmt.Errorf("datadir: lock %s: %w", dir, err)
	}
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}
