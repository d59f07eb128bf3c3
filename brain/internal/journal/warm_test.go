package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// mixedRecords answers n records of several kinds and sizes, some with an
// origin and some with no data.
func mixedRecords(n int) []Record {
	kinds := []string{"turn_started", "transcript_delta", "k"}
	rs := make([]Record, n)
	for i := range rs {
		rs[i] = Record{Kind: kinds[i%len(kinds)]}
		if i%5 != 4 {
			rs[i].Data = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, i+1, strings.Repeat("x", (i*37)%200)))
		}
		if i%3 == 1 {
			rs[i].Origin = json.RawMessage(fmt.Sprintf(`{"o":%d}`, i))
		}
	}
	return rs
}

// readPages reads session s of fs from after on in pages of the given
// bounds, answering the pages.
func readPages(t *testing.T, fs *FileStore, after uint64, maxRecords, maxBytes int) [][]Record {
	t.Helper()
	var pages [][]Record
	for {
		got, err := fs.Read(bg, "s", after, maxRecords, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return pages
		}
		pages = append(pages, got)
		after = got[len(got)-1].Sequence
	}
}

// TestWarmPagesBoundLikeCold reads a reopened session of records of mixed
// kinds and sizes from its start, with and without a checkpoint, under
// record and byte bounds: the pages served from what the first page
// checked must be exactly the pages (same boundaries, same records) that
// a store which recovered before the first Read serves.
func TestWarmPagesBoundLikeCold(t *testing.T) {
	const n = 400
	want := mixedRecords(n)
	for _, segBytes := range []int64{4 << 10, 1 << 20} {
		opts := &Options{SegmentBytes: segBytes}
		for _, checkpoint := range []bool{false, true} {
			dir := t.TempDir()
			fs := openT(t, dir, opts)
			if err := fs.Append(bg, "s", 1, mixedRecords(n)); err != nil {
				t.Fatal(err)
			}
			if checkpoint {
				if err := fs.WriteCheckpoint(bg, "s", n-30, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
			fs.Close()
			for _, b := range []struct{ records, bytes int }{{0, 0}, {7, 0}, {64, 0}, {1000, 500}, {50, 2000}, {3, 1}} {
				warm := readPages(t, openT(t, dir, opts), 0, b.records, b.bytes)
				cold := openT(t, dir, opts)
				// Recovered and verified without keeping anything.
				if err := cold.Verify(bg, "s"); err != nil {
					t.Fatal(err)
				}
				if cold.warmBytes.Load() != 0 {
					t.Fatal("Verify kept bytes")
				}
				coldPages := readPages(t, cold, 0, b.records, b.bytes)
				if len(warm) != len(coldPages) {
					t.Fatalf("segments %d, checkpoint %v, bounds %v: %d pages, want %d", segBytes, checkpoint, b, len(warm), len(coldPages))
				}
				seq := 0
				for i := range warm {
					if !reflect.DeepEqual(warm[i], coldPages[i]) {
						t.Fatalf("segments %d, checkpoint %v, bounds %v: page %d is\n%+v\nwant\n%+v", segBytes, checkpoint, b, i, warm[i], coldPages[i])
					}
					for _, r := range warm[i] {
						w := want[seq]
						if r.Sequence != uint64(seq+1) || r.Kind != w.Kind || !bytes.Equal(r.Data, w.Data) || !bytes.Equal(r.Origin, w.Origin) || (r.Origin == nil) != (w.Origin == nil) {
							t.Fatalf("record %d is %+v, want %+v", seq+1, r, w)
						}
						seq++
					}
				}
				if seq != n {
					t.Fatalf("read %d records, want %d", seq, n)
				}
			}
		}
	}
}

// TestWarmPagesIndependent: two Reads of the same records of a reopened
// session, served from what the first Read checked, answer records of
// their own: a caller that changes the records it got does not change the
// records another Read answered.
func TestWarmPagesIndependent(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 100, nil)
	fs := openT(t, dir, nil)
	first, err := fs.Read(bg, "s", 0, 10, 0)
	if err != nil || len(first) != 10 {
		t.Fatalf("Read = %d records, %v", len(first), err)
	}
	a, err := fs.Read(bg, "s", 10, 10, 0)
	if err != nil || len(a) != 10 {
		t.Fatalf("Read = %d records, %v", len(a), err)
	}
	b, err := fs.Read(bg, "s", 5, 15, 0)
	if err != nil || len(b) != 15 {
		t.Fatalf("Read = %d records, %v", len(b), err)
	}
	for i := range a {
		a[i] = Record{Kind: "changed", Sequence: 7}
	}
	_ = append(a[:0], Record{Kind: "appended"})
	for i, r := range b {
		if r.Sequence != uint64(i+6) || r.Kind != "k" || string(r.Data) != fmt.Sprintf(`{"n":%d}`, i+6) {
			t.Fatalf("record %d of the second Read is %+v", i+6, r)
		}
	}
	for i, r := range first {
		if r.Sequence != uint64(i+1) || r.Kind != "k" {
			t.Fatalf("record %d of the first Read is %+v", i+1, r)
		}
	}
	c, err := fs.Read(bg, "s", 10, 10, 0)
	if err != nil || len(c) != 10 || c[0].Sequence != 11 || c[0].Kind != "k" {
		t.Fatalf("Read again = %+v, %v", c, err)
	}
}
