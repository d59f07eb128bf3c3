package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWarmPages reads a reopened session from its start, in pages, across
// several segments, with and without a checkpoint: the journal (or the
// checkpoint's prefix) is read and checked once, by the first page, and
// the following pages are served from the bytes kept then. Every page must
// hold exactly the records written, a record appended meanwhile must not
// change records already handed out, and the kept bytes are given back
// once the reader passed them.
func TestWarmPages(t *testing.T) {
	const n = 300
	opts := &Options{SegmentBytes: 4 << 10}
	want := numbered(1, n+1)
	for _, checkpoint := range []bool{true, false} {
		for _, size := range []int{7, 50, 1000} {
			dir := t.TempDir()
			fill(t, dir, "s", n, opts)
			if checkpoint {
				fs := openT(t, dir, opts)
				if err := fs.WriteCheckpoint(bg, "s", n-20, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
				fs.Close()
			}
			fs := openT(t, dir, opts)
			var kept []Record
			after := uint64(0)
			for {
				got, err := fs.Read(bg, "s", after, size, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 {
					break
				}
				for i, r := range got {
					if r.Sequence != after+uint64(i)+1 || r.Kind != "k" || !bytes.Equal(r.Data, want[r.Sequence-1].Data) {
						t.Fatalf("checkpoint %v, page %d after %d: record %+v", checkpoint, size, after, r)
					}
				}
				if after == 0 {
					kept = got
					if fs.warmBytes.Load() == 0 && size < n {
						t.Fatalf("checkpoint %v: the first page kept nothing of what it checked", checkpoint)
					}
					if err := fs.Append(bg, "s", n+1, numbered(n+1, 1)); err != nil {
						t.Fatal(err)
					}
				}
				after = got[len(got)-1].Sequence
			}
			if after != n+1 {
				t.Fatalf("checkpoint %v: read through %d, want %d", checkpoint, after, n+1)
			}
			if w := fs.warmBytes.Load(); w != 0 {
				t.Fatalf("checkpoint %v: %d bytes still kept after reading through", checkpoint, w)
			}
			for i, r := range kept {
				if !bytes.Equal(r.Data, want[i].Data) {
					t.Fatalf("record %d changed to %s", i+1, r.Data)
				}
			}
		}
	}
}

// TestWarmTornTail: a reopened journal whose last frame is torn is read
// from its start through the kept bytes, which end before the cut.
func TestWarmTornTail(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 20, nil)
	path := segPath(dir, "s", 1)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-3], 0o600)
	fs := openT(t, dir, nil)
	got, err := fs.Read(bg, "s", 0, 0, 0)
	if err != nil || len(got) != 19 {
		t.Fatalf("Read = %d records, %v; want the 19 complete ones", len(got), err)
	}
	if torn, _ := filepath.Glob(path + ".torn-*"); len(torn) != 1 {
		t.Fatalf("torn tail kept as %v", torn)
	}
	if err := fs.Append(bg, "s", 20, numbered(20, 1)); err != nil {
		t.Fatal(err)
	}
	if got, err := fs.Read(bg, "s", 18, 0, 0); err != nil || len(got) != 2 || got[1].Sequence != 20 {
		t.Fatalf("Read after the append = %+v, %v", got, err)
	}
}
