//go:build unix

package loophost

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mapped is a guest's linear memory in an anonymous private mapping that
// reserves the memory limit up front: growing never moves or copies it,
// untouched pages cost nothing, and fresh pages are zero without clearing.
// The activation that owns it unmaps it once the instance is closed and
// no longer running (free only marks it: wazero may free an instance's
// memory from another goroutine, for example when the runtime is closed
// while the guest still runs).
type mapped struct {
	mem []byte
}

func newMapped(max uint64) (*mapped, error) {
	if max == 0 {
		max = pageBytes
	}
	mem, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
	if err != nil {
		return nil, err
	}
	return &mapped{mem: mem}, nil
}

func (m *mapped) Reallocate(size uint64) []byte {
	if size > uint64(len(m.mem)) {
		return nil
	}
	return m.mem[:size]
}

func (m *mapped) Free() {}

func (m *mapped) unmap() { _ = syscall.Munmap(m.mem) }

// memoryAllocator answers the allocator of one activation's instance and
// the function that releases what it allocated.
func memoryAllocator() (experimental.MemoryAllocator, func()) {
	var maps []*mapped
	alloc := experimental.MemoryAllocatorFunc(func(cap, max uint64) experimental.LinearMemory {
		m, err := newMapped(max)
		if err != nil {
			return &sliceMemory{buf: make([]byte, 0, cap), max: max}
		}
		maps = append(maps, m)
		return m
	})
	return alloc, func() {
		for _, m := range maps {
			m.unmap()
		}
	}
}
