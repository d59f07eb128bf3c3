package journal

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkKeptCheck reads the 20k-record segment of BenchmarkReopen's
// fixture into one buffer and checks it as recovery does for kept bytes:
// in reads of keptChunkBytes, each checked right after it (chunked), or
// one read of the whole file and then the check (whole).
func BenchmarkKeptCheck(b *testing.B) {
	dir := reopenFixture(b)
	segs, _ := filepath.Glob(filepath.Join(dir, "s", "journal", "*.segment"))
	if len(segs) != 1 {
		b.Fatalf("%d segments", len(segs))
	}
	run := func(b *testing.B, chunk int) {
		f, err := os.Open(segs[0])
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		b.SetBytes(fi.Size())
		for b.Loop() {
			buf := make([]byte, fi.Size())
			k := newKeptChecker(1, DefaultMaxRecordBytes, 0, 0, nil)
			if rerr, err := k.readKept(f, buf, chunk); rerr != nil || err != nil || k.next != reopenRecords+1 {
				b.Fatal(rerr, err, k.next)
			}
		}
	}
	b.Run("raw-read", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(segs[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-only", func(b *testing.B) {
		buf, err := os.ReadFile(segs[0])
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if c, err := checkKept(buf, 1, DefaultMaxRecordBytes, 0, 0, nil); err != nil || c.next != reopenRecords+1 {
				b.Fatal(err, c.next)
			}
		}
	})
	b.Run("whole", func(b *testing.B) { run(b, 1<<62) })
	b.Run("chunked", func(b *testing.B) { run(b, keptChunkBytes) })
	b.Run("chunked-64k", func(b *testing.B) { run(b, 64<<10) })
	b.Run("chunked-1m", func(b *testing.B) { run(b, 1<<20) })
}
