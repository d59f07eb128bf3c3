package fullfs

import (
	"strconv"
	"syscall"
)

func doMount(dir string, size int64, inodes int) error {
	opts := "size=" + strconv.FormatInt(size, 10) + ",mode=0700"
	if inodes > 0 {
		opts += ",nr_inodes=" + strconv.Itoa(inodes)
	}
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts)
}

func unmount(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
