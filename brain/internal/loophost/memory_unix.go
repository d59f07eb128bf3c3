//go:build unix

package loophost

import (
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mapped is a guest's linear memory in an anonymous private mapping that
// reserves the memory limit up front: growing never moves or copies it,
// untouched pages cost nothing, and fresh pages are zero without clearing.
// The activation that owns it releases it once the instance is closed and
// no longer running (free only marks it: wazero may free an instance's
// memory from another goroutine, for example when the runtime is closed
// while the guest still runs).
type mapped struct {
	mem []byte
	// used is the most the guest was ever given: the rest of mem has
	// never been handed out and is still zero.
	used uint64
}

// Released mappings of at most keptBytes in use are zeroed and kept, up
// to keptMappings of them, for the next instance: clearing what a guest
// used is several times cheaper than faulting fresh pages in again, one
// by one, and saves a map and an unmap per instance. The rest are
// unmapped.
const (
	keptMappings = 16
	keptBytes    = 16 << 20
)

var kept struct {
	sync.Mutex
	free []*mapped
}

// takeMapped answers a zeroed mapping reserving max bytes: a kept one, or
// a new one.
func takeMapped(max uint64) (*mapped, error) {
	if max == 0 {
		max = pageBytes
	}
	kept.Lock()
	for i := len(kept.free) - 1; i >= 0; i-- {
		if m := kept.free[i]; uint64(len(m.mem)) == max {
			kept.free = append(kept.free[:i], kept.free[i+1:]...)
			kept.Unlock()
			return m, nil
		}
	}
	kept.Unlock()
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
	m.used = max(m.used, size)
	return m.mem[:size]
}

func (m *mapped) Free() {}

// release zeroes every byte the guest was given and keeps the mapping for
// another instance, or unmaps it. Nothing of one guest's memory is ever
// seen by the next.
func (m *mapped) release() {
	kept.Lock()
	room := len(kept.free) < keptMappings
	kept.Unlock()
	// Zeroing is skipped when no mapping could be kept (checked again
	// after it: another release may have taken the last place).
	if room && m.used <= keptBytes {
		zeroUsed(m.mem[:m.used])
		m.used = 0
		kept.Lock()
		if len(kept.free) < keptMappings {
			kept.free = append(kept.free, m)
			kept.Unlock()
			return
		}
		kept.Unlock()
	}
	_ = syscall.Munmap(m.mem)
}

// memoryAllocator answers the allocator of one activation's instance and
// the function that releases what it allocated.
func memoryAllocator() (experimental.MemoryAllocator, func()) {
	var maps []*mapped
	alloc := experimental.MemoryAllocatorFunc(func(cap, max uint64) experimental.LinearMemory {
		m, err := takeMapped(max)
		if err != nil {
			return &sliceMemory{buf: make([]byte, 0, cap), max: max}
		}
		maps = append(maps, m)
		return m
	})
	return alloc, func() {
		for _, m := range maps {
			m.release()
		}
	}
}
