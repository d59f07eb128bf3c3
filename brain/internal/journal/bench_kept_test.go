package journal

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkKeptCheck reads the 20k-record segment of BenchmarkReopen's
// fixture as recovery reads a segment it keeps (one buffer, one read,
// then checkKept) and as os.ReadFile does, alternated inside one loop so
// that both see the same machine, and times checkKept alone over bytes
// read already. It reports the median of each and the ratio of the kept
// read to the raw one.
func BenchmarkKeptCheck(b *testing.B) {
	dir := reopenFixture(b)
	segs, _ := filepath.Glob(filepath.Join(dir, "s", "journal", "*.segment"))
	if len(segs) != 1 {
		b.Fatalf("%d segments", len(segs))
	}
	f, err := os.Open(segs[0])
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	var kept, raw, check []time.Duration
	for i := 0; b.Loop(); i++ {
		for j := range 2 {
			start := time.Now()
			if (i+j)%2 == 0 {
				buf := make([]byte, fi.Size())
				if n, err := f.ReadAt(buf, 0); int64(n) != fi.Size() {
					b.Fatal(err)
				}
				t := time.Now()
				if c, err := checkKept(buf, 1, DefaultMaxRecordBytes, 0, 0, nil); err != nil || c.next != reopenRecords+1 {
					b.Fatal(err, c.next)
				}
				check = append(check, time.Since(t))
				kept = append(kept, time.Since(start))
			} else {
				if _, err := os.ReadFile(segs[0]); err != nil {
					b.Fatal(err)
				}
				raw = append(raw, time.Since(start))
			}
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	k, r := median(kept), median(raw)
	b.ReportMetric(k, "kept-µs")
	b.ReportMetric(median(check), "check-µs")
	b.ReportMetric(r, "raw-read-µs")
	b.ReportMetric(k/r, "kept/raw")
}
