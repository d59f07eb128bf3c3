//go:build !amd64 || purego

package journal

import "hash/crc32"

// checksum3 answers the CRC32-C (Castagnoli) checksums of a, b and c.
func checksum3(a, b, c []byte) (uint32, uint32, uint32) {
	return crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), crc32.Checksum(c, castagnoli)
}
