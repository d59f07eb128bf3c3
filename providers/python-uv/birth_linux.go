package pythonuv

import "golang.org/x/sys/unix"

// birthTime is the creation time, in nanoseconds, of the file path names
// (a symbolic link followed), or 0 where the file system does not record
// one.
func birthTime(path string) int64 {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return st.Btime.Sec*1_000_000_000 + int64(st.Btime.Nsec)
}
