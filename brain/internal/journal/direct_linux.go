//go:build linux

package journal

import (
	"os"
	"syscall"
	"unsafe"
)

// readDevice reads n bytes at off of the file at path past the page
// cache (O_DIRECT), so that it answers what reached the device.
func readDevice(path string, off int64, n int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const align = 4096
	start := off &^ (align - 1)
	length := int((off + int64(n) - start + align - 1) &^ (align - 1))
	raw := make([]byte, length+align)
	shift := int(align-uintptr(unsafe.Pointer(&raw[0]))%align) % align
	buf := raw[shift : shift+length]
	got := 0
	for got < length {
		k, err := f.ReadAt(buf[got:], start+int64(got))
		got += k
		if err != nil || k == 0 {
			break // the end of the file
		}
	}
	from := int(off - start)
	if got < from+n {
		return buf[from:max(got, from)], nil
	}
	return buf[from : from+n], nil
}
