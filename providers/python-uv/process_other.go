//go:build !linux

package pythonuv

import (
	"errors"
	"os/exec"
)

// waitExited waits for and reaps cmd's process: this system offers no
// portable wait that leaves it unreaped, so the group is killed right after.
func waitExited(cmd *exec.Cmd) (reaped bool, err error) {
	var exit *exec.ExitError
	if err := cmd.Wait(); err != nil && !errors.As(err, &exit) {
		return true, err
	}
	return true, nil
}
