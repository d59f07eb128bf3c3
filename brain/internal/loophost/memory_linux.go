package loophost

import (
	"os"
	"syscall"
	"unsafe"
)

const mapNoReserve = syscall.MAP_NORESERVE

// zeroUsed makes mem, the part of a kept mapping a guest was given, all
// zero again. Pages that mincore reports resident (those the guest
// touched) are cleared in place and stay resident for the next instance;
// the others are dropped with MADV_DONTNEED, which leaves them zero
// whatever they held (a page swapped out is not resident, so it is
// dropped too). Should either call fail, the whole of mem is cleared.
func zeroUsed(mem []byte) {
	page := os.Getpagesize()
	if len(mem) == 0 || len(mem)%page != 0 {
		clear(mem)
		return
	}
	n := len(mem) / page
	vec := make([]byte, n)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		clear(mem)
		return
	}
	for i := 0; i < n; {
		resident := vec[i]&1 != 0
		j := i + 1
		for j < n && (vec[j]&1 != 0) == resident {
			j++
		}
		run := mem[i*page : j*page]
		if resident {
			clear(run)
		} else if err := syscall.Madvise(run, syscall.MADV_DONTNEED); err != nil {
			clear(run)
		}
		i = j
	}
}
