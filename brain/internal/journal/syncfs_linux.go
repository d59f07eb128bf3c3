//go:build linux && (amd64 || arm64)

package journal

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// syncfsSupported reports whether syncfs(2) can stand in for per-file
// flushes: Linux 5.8 and later report writeback errors of any file of the
// file system to syncfs (older kernels return success regardless). The
// kernel is asked once per process.
var syncfsSupported = sync.OnceValue(kernelReportsSyncfsErrors)

func kernelReportsSyncfsErrors() bool {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return kernelAtLeast(b.String(), 5, 8)
}

// kernelAtLeast reports whether a kernel release string such as
// "6.1.0-18-amd64" is at least major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err := strconv.Atoi(parts[0])
	if err != nil {
		return false
	}
	minStr := parts[1]
	if i := strings.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	mnr, err := strconv.Atoi(minStr)
	if err != nil {
		return false
	}
	return maj > major || (maj == major && mnr >= minor)
}

// syncfs flushes the whole file system holding f: the data and metadata
// of every file written through it, then the device cache.
func syncfs(f *os.File) error {
	err := onFD(f, func(fd int) error {
		if _, _, e := syscall.Syscall(sysSyncfs, uintptr(fd), 0, 0); e != 0 {
			return e
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("syncfs: %w", err)
	}
	return nil
}
