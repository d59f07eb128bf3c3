//go:build amd64 && !purego

package journal

import "hash/crc32"

// The CRC32 instruction takes three cycles and the processor runs three
// independent ones at once, so one frame's checksum (a chain of dependent
// instructions) uses a third of it; checksum3 runs three frames' chains
// side by side. hash/crc32 does the same within one buffer, but only for
// buffers of 504 bytes or more, and most records are shorter.

// crc32c3x8 runs the CRC32-C instruction over n 8-byte words of a, b and
// c, from the raw (not inverted) states sa, sb and sc.
//
//go:noescape
func crc32c3x8(a, b, c *byte, n int, sa, sb, sc uint32) (ra, rb, rc uint32)

//go:noescape
func crc32cTail(p *byte, n int, s uint32) uint32

// cpuid1ECX answers ECX of CPUID leaf 1.
func cpuid1ECX() uint32

var haveCRC32Insn = cpuid1ECX()&(1<<20) != 0 // SSE4.2

// checksum3 answers the CRC32-C (Castagnoli) checksums of a, b and c, as
// crc32.Checksum(x, castagnoli) does.
func checksum3(a, b, c []byte) (uint32, uint32, uint32) {
	n := min(len(a), len(b), len(c)) / 8
	if !haveCRC32Insn || n == 0 {
		return crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), crc32.Checksum(c, castagnoli)
	}
	ra, rb, rc := crc32c3x8(&a[0], &b[0], &c[0], n, ^uint32(0), ^uint32(0), ^uint32(0))
	return ^tail(a[8*n:], ra), ^tail(b[8*n:], rb), ^tail(c[8*n:], rc)
}

func tail(p []byte, s uint32) uint32 {
	if len(p) == 0 {
		return s
	}
	return crc32cTail(&p[0], len(p), s)
}
