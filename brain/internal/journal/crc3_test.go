package journal

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestChecksum3 checks that checksum3 answers crc32.Checksum for every
// mix of lengths (equal, unequal, shorter than a word, empty) and
// alignments.
func TestChecksum3(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	slice := func() []byte {
		off := r.IntN(64)
		n := r.IntN(600)
		if r.IntN(8) == 0 {
			n = r.IntN(9)
		}
		return buf[off : off+n]
	}
	for range 20000 {
		a, b, c := slice(), slice(), slice()
		ga, gb, gc := checksum3(a, b, c)
		if wa, wb, wc := crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), crc32.Checksum(c, castagnoli); ga != wa || gb != wb || gc != wc {
			t.Fatalf("checksum3(len %d, %d, %d) = %08x %08x %08x, want %08x %08x %08x", len(a), len(b), len(c), ga, gb, gc, wa, wb, wc)
		}
	}
}

// FuzzChecksum3 compares checksum3 with hash/crc32 on arbitrary inputs.
func FuzzChecksum3(f *testing.F) {
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz0123456789"), 3, 17)
	f.Fuzz(func(t *testing.T, b []byte, i, j int) {
		if len(b) == 0 {
			return
		}
		i, j = min(max(i, 0), len(b)), min(max(j, 0), len(b))
		x, y, z := b[:i], b[i:], b[j:]
		gx, gy, gz := checksum3(x, y, z)
		if gx != crc32.Checksum(x, castagnoli) || gy != crc32.Checksum(y, castagnoli) || gz != crc32.Checksum(z, castagnoli) {
			t.Fatalf("checksum3 differs from hash/crc32 on %x / %d / %d", b, i, j)
		}
	})
}
