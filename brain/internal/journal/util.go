package journal

import (
	"encoding/binary"
	"os"
	"syscall"
)

func leUint64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// onFD runs call on f's descriptor, again for as long as it answers EINTR.
func onFD(f *os.File, call func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if cerr = call(int(fd)); cerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return cerr
}
