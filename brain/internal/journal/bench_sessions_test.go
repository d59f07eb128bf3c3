package journal

import (
	"fmt"
	"testing"
)

// BenchmarkSessions measures listing the sessions of a store that holds
// 2,000 sessions of one record each: the first listing after the store
// opened ("first", which reads each session's first frame header) and the
// listings after it ("again").
func BenchmarkSessions(b *testing.B) {
	const n = 2000
	dir := b.TempDir()
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := fs.Append(bg, fmt.Sprintf("s%05d", i), 1, []Record{{Kind: "k", Data: benchData}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := fs.Close(); err != nil {
		b.Fatal(err)
	}
	list := func(b *testing.B, fs *FileStore) {
		ids, err := fs.Sessions(bg)
		if err != nil || len(ids) != n {
			b.Fatalf("Sessions = %d ids, %v; want %d", len(ids), err, n)
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fs, err := OpenFileStore(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			list(b, fs)
			b.StopTimer()
			fs.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/session")
	})
	b.Run("again", func(b *testing.B) {
		fs, err := OpenFileStore(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer fs.Close()
		list(b, fs)
		for b.Loop() {
			list(b, fs)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/session")
	})
}
