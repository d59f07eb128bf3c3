//go:build wasip1

package guestabi

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

//go:wasmimport brain answer
func hostAnswer(ptr unsafe.Pointer, n uint32) uint32

// Import is a host service import.
type Import func(ptr unsafe.Pointer, n uint32) uint64

// calling is held from a service import to the answer import that
// fetches its answer: the host keeps the answer of the last call only,
// and a goroutine may be switched out between the two (the allocation of
// the answer buffer may run the garbage collector, which may park it).
// A goroutine that waits for it parks; none can run while the holder is
// in the host, whose call blocks the whole guest.
var calling sync.Mutex

// Call sends raw (null when empty) to fn and answers the status and the
// answer bytes. Goroutines may call it concurrently: each gets the answer
// of its own call.
func Call(fn Import, raw []byte) (status uint32, answer []byte, err error) {
	if len(raw) == 0 {
		raw = []byte("null")
	}
	calling.Lock()
	defer calling.Unlock()
	r := fn(unsafe.Pointer(unsafe.SliceData(raw)), uint32(len(raw)))
	runtime.KeepAlive(raw)
	status, n := uint32(r>>32), uint32(r)
	answer = make([]byte, n)
	if n > 0 {
		if got := hostAnswer(unsafe.Pointer(unsafe.SliceData(answer)), n); got != n {
			return status, nil, fmt.Errorf("host answered %d of %d bytes", got, n)
		}
	}
	return status, answer, nil
}

// input holds the buffer brain_alloc handed out; out holds the last
// answer until the host has read it.
var input, out []byte

//go:wasmexport brain_alloc
func brainAlloc(size uint32) uint32 {
	input = make([]byte, max(size, 1))
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

// Input answers the n bytes at ptr, which must be the buffer brain_alloc
// handed out last, and forgets the buffer; ok is false otherwise.
func Input(ptr, n uint32) (raw []byte, ok bool) {
	if input == nil || uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input)))) != ptr || int(n) > len(input) {
		return nil, false
	}
	raw = input[:n]
	input = nil
	return raw, true
}

// Answer keeps b until the next call and answers it as an export's
// result: ptr<<32 | len.
func Answer(b []byte) uint64 {
	out = b
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}
