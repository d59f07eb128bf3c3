package journal

import (
	"bytes"
	"testing"
)

// TestWarmPrefixPages reads a reopened session from its start, in pages,
// across several segments: the checkpoint's prefix is verified once by the
// first page and the following pages are served from the bytes it kept.
// Every page must equal what a store without the checkpoint answers, a
// record appended meanwhile must not change records already handed out,
// and the kept bytes are given back once the reader passed them.
func TestWarmPrefixPages(t *testing.T) {
	const n = 300
	opts := &Options{SegmentBytes: 4 << 10}
	cold, plain := t.TempDir(), t.TempDir()
	fill(t, cold, "s", n, opts)
	fill(t, plain, "s", n, opts)
	fs := openT(t, cold, opts)
	if err := fs.WriteCheckpoint(bg, "s", n-20, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	fs = openT(t, cold, opts)
	ref := openT(t, plain, opts)
	if s, _ := fs.session("s"); s == nil {
		t.Fatal("no session")
	}
	var kept []Record
	for _, size := range []int{7, 50, 1000} {
		after := uint64(0)
		for {
			got, err := fs.Read(bg, "s", after, size, 0)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Read(bg, "s", after, size, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("page after %d: %d records, want %d", after, len(got), len(want))
			}
			for i := range got {
				if got[i].Sequence != want[i].Sequence || got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("record %d: %+v, want %+v", want[i].Sequence, got[i], want[i])
				}
			}
			if len(got) == 0 {
				break
			}
			if after == 0 && size == 7 {
				kept = append(kept, got...)
				if fs.warmBytes.Load() == 0 {
					t.Fatal("the first page kept nothing of the verified prefix")
				}
				// An append while the prefix is kept.
				if err := fs.Append(bg, "s", n+1, numbered(n+1, 1)); err != nil {
					t.Fatal(err)
				}
				if err := ref.Append(bg, "s", n+1, numbered(n+1, 1)); err != nil {
					t.Fatal(err)
				}
			}
			after = got[len(got)-1].Sequence
		}
		if w := fs.warmBytes.Load(); w != 0 {
			t.Fatalf("%d bytes still kept after reading through", w)
		}
	}
	for i, r := range numbered(1, 7) {
		if !bytes.Equal(kept[i].Data, r.Data) {
			t.Fatalf("record %d changed to %s", i+1, kept[i].Data)
		}
	}
}
