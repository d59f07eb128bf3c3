package journal

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

func TestKernelAtLeast(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("syncfs is used on linux/amd64 and linux/arm64 only")
	}
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"5.8.0", true}, {"5.7.19-generic", false}, {"6.1.0-18-amd64", true}, {"4.19.0", false},
		{"5.10", true}, {"5.8-rc1", true}, {"5", false}, {"x.y", false}, {"10.0.1", true},
	} {
		if got := kernelAtLeast(c.release, 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}

// TestGroupCommitBarrier checks that with 128 sessions appending at once a
// group commit takes one durability barrier (one syncfs) for all of its
// files, so that there are at least 32 records per barrier.
func TestGroupCommitBarrier(t *testing.T) {
	if !syncfsSupported() {
		t.Skip("syncfs(2) with error reporting is not available here")
	}
	const sessions, each = 128, 20
	fs := openT(t, t.TempDir(), nil)
	var wg sync.WaitGroup
	for i := range sessions { // creation rounds also sync directories
		wg.Go(func() {
			if err := fs.Append(bg, fmt.Sprint("s", i), 1, numbered(1, 1)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	before := fs.Stats()
	// All appenders start together so that rounds are full.
	start := make(chan struct{})
	for i := range sessions {
		wg.Go(func() {
			<-start
			for n := 2; n < 2+each; n++ {
				if err := fs.Append(bg, fmt.Sprint("s", i), uint64(n), numbered(n, 1)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	st := fs.Stats()
	recs, syncs, rounds := st.Records-before.Records, st.Syncs-before.Syncs, st.Rounds-before.Rounds
	t.Logf("%d records, %d rounds, %d barriers (%d syncfs): %.1f records per barrier",
		recs, rounds, syncs, st.SyncFS-before.SyncFS, float64(recs)/float64(syncs))
	if recs != sessions*each {
		t.Fatalf("%d records committed, want %d", recs, sessions*each)
	}
	if st.SyncFS == before.SyncFS {
		t.Errorf("no syncfs in %d group commits", rounds)
	}
	if float64(recs)/float64(syncs) < 32 {
		t.Errorf("%.1f records per barrier, want at least 32", float64(recs)/float64(syncs))
	}
	for i := range sessions {
		if rs, err := fs.Read(bg, fmt.Sprint("s", i), 0, 0, 0); err != nil || len(rs) != 1+each {
			t.Fatalf("session %d: %d records, %v", i, len(rs), err)
		}
	}
}
