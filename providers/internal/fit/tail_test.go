package fit

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// However a stream is cut into writes, a Tail keeps its last limit bytes
// in at most limit bytes of memory; Last answers the end of those,
// beginning at a whole character whenever something came before it, and
// Bytes answers them as they were written.
func TestTailKeepsTheEndBetweenCharacters(t *testing.T) {
	var stream []byte
	for i := range 60 {
		stream = append(stream, []byte(string(rune('a'+i%26))+"é€😀")...)
	}
	for _, limit := range []int64{0, 1, 3, 4, 5, 10, 17} {
		// Pieces of every size from 1 to limit+5 bytes cut the stream
		// inside characters as well as between them, and write more
		// than limit at once.
		for size := 1; size <= int(limit)+5; size++ {
			for n := 0; n <= len(stream); n += 1 + n/7 {
				data := stream[:n]
				tl := NewTail(limit)
				for p := data; len(p) > 0; {
					k := min(size, len(p))
					if w, err := tl.Write(p[:k]); w != k || err != nil {
						t.Fatalf("Write(%d bytes) = %d, %v", k, w, err)
					}
					p = p[k:]
				}
				if int64(cap(tl.ring)) > limit {
					t.Fatalf("limit %d: ring of %d bytes", limit, cap(tl.ring))
				}
				if tl.Written() != int64(n) || tl.Truncated() != (int64(n) > limit) {
					t.Fatalf("limit %d, %d bytes: written %d, truncated %v", limit, n, tl.Written(), tl.Truncated())
				}
				kept := data[max(int64(n)-limit, 0):]
				if got := tl.Bytes(); !bytes.Equal(got, kept) {
					t.Fatalf("limit %d, size %d, %d bytes: Bytes %q, want %q", limit, size, n, got, kept)
				}
				for m := int64(0); m <= limit+2; m++ {
					got := tl.Last(m)
					want := kept[max(int64(len(kept))-m, 0):]
					if int64(len(want)) < int64(n) {
						// Something came before: the character the cut
						// left unfinished is dropped (unless nothing of
						// a character's start is left: the bytes are
						// answered as they are).
						for i := 0; i < len(want) && i < utf8.UTFMax; i++ {
							if utf8.RuneStart(want[i]) {
								want = want[i:]
								break
							}
						}
					}
					if !bytes.Equal(got, want) || (utf8.Valid(data) && min(m, limit) >= utf8.UTFMax && !utf8.Valid(got)) {
						t.Fatalf("limit %d, size %d, %d bytes: Last(%d) = %q, want %q", limit, size, n, m, got, want)
					}
				}
			}
		}
	}
}

// What Last and Bytes answer is a copy: later writes do not change it.
func TestTailAnswersCopies(t *testing.T) {
	tl := NewTail(4)
	tl.Write([]byte("abcd"))
	last, all := tl.Last(4), tl.Bytes()
	tl.Write([]byte("wxyz"))
	if string(last) != "abcd" || string(all) != "abcd" || string(tl.Last(2)) != "yz" {
		t.Fatalf("Last %q, Bytes %q after more writes, Last(2) %q", last, all, tl.Last(2))
	}
}

// A write larger than the limit keeps its end, in memory of the limit,
// and a limit of zero keeps nothing yet counts what was written.
func TestTailLargeWritesAndZeroLimit(t *testing.T) {
	tl := NewTail(6)
	tl.Write([]byte("ab"))
	tl.Write([]byte(strings.Repeat("x", 1<<20) + "éfin"))
	if got := tl.Last(4); string(got) != "fin" || cap(tl.ring) != 6 {
		t.Fatalf("Last(4) = %q with %d bytes of ring; want %q within 6", got, cap(tl.ring), "fin")
	}
	if got := tl.Last(5); string(got) != "éfin" {
		t.Fatalf("Last(5) = %q, want %q", got, "éfin")
	}
	if got := tl.Bytes(); string(got) != "xéfin" {
		t.Fatalf("Bytes = %q", got)
	}
	zero := NewTail(0)
	zero.Write([]byte("abc"))
	if !zero.Truncated() || zero.Written() != 3 || len(zero.Last(3)) != 0 || len(zero.Bytes()) != 0 || cap(zero.ring) != 0 {
		t.Fatalf("limit 0: truncated %v, written %d, last %q", zero.Truncated(), zero.Written(), zero.Last(3))
	}
	if negative := NewTail(-5); negative.Truncated() || len(negative.Last(1)) != 0 {
		t.Fatalf("a negative limit keeps something")
	}
	// Bytes that are not text are answered as they are.
	bin := NewTail(3)
	bin.Write([]byte{1, 0x80, 0x80, 0x80, 0x80})
	if got := bin.Last(3); !bytes.Equal(got, []byte{0x80, 0x80, 0x80}) {
		t.Fatalf("binary Last = %q", got)
	}
}

// Writers on several goroutines each see all they wrote accepted, and the
// total is counted.
func TestTailConcurrentWriters(t *testing.T) {
	tl := NewTail(100)
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(3, 4))
	var total int64
	for range 8 {
		p := bytes.Repeat([]byte("é"), 1+rng.IntN(200))
		total += int64(len(p)) * 50
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				tl.Write(p)
				_ = tl.Last(50)
			}
		}()
	}
	wg.Wait()
	if tl.Written() != total || len(tl.Bytes()) != 100 || !utf8.Valid(tl.Last(100)) {
		t.Fatalf("written %d of %d, kept %d", tl.Written(), total, len(tl.Bytes()))
	}
}
