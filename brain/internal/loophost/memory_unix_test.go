//go:build unix

package loophost

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestKeptMappingComesBackZeroed: a mapping released by one instance is
// kept, and the next instance given it sees nothing the first wrote.
func TestKeptMappingComesBackZeroed(t *testing.T) {
	const max = 3<<20 + pageBytes // a size no other test asks for
	alloc, release := memoryAllocator()
	first := alloc.Allocate(2*pageBytes, max)
	mem := first.Reallocate(5 * pageBytes)
	if len(mem) != 5*pageBytes {
		t.Fatalf("Reallocate answered %d bytes", len(mem))
	}
	// Whole pages written, and single bytes in pages otherwise untouched.
	for i := range 2 * pageBytes {
		mem[i] = 0xAA
	}
	for _, i := range []int{3*pageBytes + 5, 4*pageBytes + 4095, 5*pageBytes - 1} {
		mem[i] = 0x55
	}
	at := unsafe.Pointer(&mem[0])
	release()

	alloc, release = memoryAllocator()
	defer release()
	second := alloc.Allocate(pageBytes, max)
	mem = second.Reallocate(6 * pageBytes)
	if unsafe.Pointer(&mem[0]) != at {
		t.Fatal("the released mapping was not kept for the next instance")
	}
	if i := bytes.IndexFunc(mem, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d of the kept mapping is not zero", i)
	}
}

// TestLargeMappingIsNotKept: a mapping whose guest used more than
// keptBytes is unmapped, not kept.
func TestLargeMappingIsNotKept(t *testing.T) {
	const max = 40 << 20
	alloc, release := memoryAllocator()
	m := alloc.Allocate(0, max)
	mem := m.Reallocate(keptBytes + pageBytes)
	mem[len(mem)-1] = 1
	release()
	kept.Lock()
	defer kept.Unlock()
	for _, k := range kept.free {
		if uint64(len(k.mem)) == max {
			t.Fatal("a mapping past keptBytes was kept")
		}
	}
}
