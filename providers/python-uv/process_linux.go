package pythonuv

import (
	"errors"
	"os/exec"
	"syscall"
	"unsafe"
)

// waitid constants of <linux/wait.h>.
const (
	pPID    = 1
	wExited = 0x4
	wNoWait = 0x01000000
)

// waitExited blocks until cmd's process has exited, leaving it unreaped
// (reaped is false): its pid, the group id, stays reserved until cmd.Wait.
func waitExited(cmd *exec.Cmd) (reaped bool, err error) {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if errno == 0 {
			return false, nil
		}
		if errors.Is(errno, syscall.EINTR) {
			continue
		}
		return false, errno
	}
}
