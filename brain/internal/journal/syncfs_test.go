package journal

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
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
// group commit takes one durability barrier (one fdatasync of the commit
// log) for all of its sessions, so that rounds batch many records (at
// least 8 per barrier: without group commit there would be one; on an idle
// machine there are about 60, and a loaded one still gathers 20 or more),
// and that the segments are made durable at the sync point.
func TestGroupCommitBarrier(t *testing.T) {
	const sessions, each = 128, 20
	fs := openT(t, t.TempDir(), &Options{SyncPointInterval: time.Hour})
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
	t.Logf("%d records, %d rounds, %d barriers: %.1f records per barrier",
		recs, rounds, syncs, float64(recs)/float64(syncs))
	if recs != sessions*each {
		t.Fatalf("%d records committed, want %d", recs, sessions*each)
	}
	if syncs != rounds {
		t.Errorf("%d barriers in %d group commits, want one each", syncs, rounds)
	}
	if float64(recs)/float64(syncs) < 8 {
		t.Errorf("%.1f records per barrier, want at least 8", float64(recs)/float64(syncs))
	}
	for i := range sessions {
		if rs, err := fs.Read(bg, fmt.Sprint("s", i), 0, 0, 0); err != nil || len(rs) != 1+each {
			t.Fatalf("session %d: %d records, %v", i, len(rs), err)
		}
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	st = fs.Stats()
	if st.SyncPoints != 1 || (syncfsSupported() && st.SyncFS != 1) {
		t.Errorf("Close took %d sync points with %d syncfs, want 1 (syncfs when supported)", st.SyncPoints, st.SyncFS)
	}
}
