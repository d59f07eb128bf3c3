//go:build amd64 && !purego

package journal

import (
	"hash/crc32"
	"unsafe"
)

// The CRC32 instruction takes three cycles and the processor runs three
// independent ones at once, so one frame's checksum (a chain of dependent
// instructions) uses a third of it; checksum3 runs three frames' chains
// side by side, their last bytes included. hash/crc32 does the same
// within one buffer, but only for buffers of 504 bytes or more, and most
// records are shorter.

// crc32c3 answers the CRC32-C checksums of the na, nb and nc bytes at a,
// b and c.
//
//go:noescape
func crc32c3(a, b, c *byte, na, nb, nc int) (ra, rb, rc uint32)

// cpuid1ECX answers ECX of CPUID leaf 1.
func cpuid1ECX() uint32

var haveCRC32Insn = cpuid1ECX()&(1<<20) != 0 // SSE4.2

// checksum3 answers the CRC32-C (Castagnoli) checksums of a, b and c, as
// crc32.Checksum(x, castagnoli) does.
func checksum3(a, b, c []byte) (uint32, uint32, uint32) {
	if !haveCRC32Insn {
		return crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), crc32.Checksum(c, castagnoli)
	}
	return crc32c3(unsafe.SliceData(a), unsafe.SliceData(b), unsafe.SliceData(c), len(a), len(b), len(c))
}
