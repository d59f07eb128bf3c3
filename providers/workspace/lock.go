package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the file under the root whose exclusive flock(2) the
// provider serving the root holds.
const lockName = ".lock"

// lockRoot takes the exclusive lock of root without waiting; a root that
// another provider holds is ErrRootInUse. The descriptor is not inherited
// by commands, so a command that outlives its provider does not keep the
// root from the next one.
func lockRoot(root string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(root, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("workspace: open the lock of %s: %w", root, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (%s is locked)", ErrRootInUse, root, lockName)
		}
		return nil, fmt.Errorf("workspace: lock %s: %w", root, err)
	}
	return f, nil
}
