package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// zeroTailCases write n records to session "s" of a closed store at sdir
// and answer how the first use of the reopened session reads it.
var zeroTailCases = []struct {
	name string
	n    int
	big  bool // records large enough for a segment read in chunks
	cp   bool // a checkpoint covers the records
	use  func(fs *FileStore) error
}{
	{name: "next", n: 3, use: func(fs *FileStore) error { _, err := fs.Next(bg, "s"); return err }},
	{name: "read", n: 3, use: func(fs *FileStore) error { _, err := fs.Read(bg, "s", 0, 0, 0); return err }},
	{name: "chunked read", n: 10, big: true, use: func(fs *FileStore) error { _, err := fs.Read(bg, "s", 0, 0, 0); return err }},
	{name: "checkpoint", n: 5, cp: true, use: func(fs *FileStore) error { _, err := fs.Next(bg, "s"); return err }},
}

func zeroTailRecords(n int, big bool) []Record {
	rs := numbered(1, n)
	if big {
		for i := range rs {
			rs[i].Data = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i+1, bytes.Repeat([]byte("x"), 64<<10)))
		}
	}
	return rs
}

// readSession answers every record of id.
func readSession(t *testing.T, fs *FileStore, id string) []Record {
	t.Helper()
	var all []Record
	for {
		page, err := fs.Read(bg, id, uint64(len(all)), 0, 0)
		if err != nil {
			t.Fatalf("Read(%s, %d) = %v", id, len(all), err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
	}
}

// A crash can leave a segment's new size durable without the data of a
// write that was never acknowledged: the segment then ends in zero bytes
// after its last record. The session opens with every record, the zeros
// are cut (and kept beside the segment, as any torn tail), and appends go
// on where the records end, also after the next restart.
func TestSegmentZeroTailIsCut(t *testing.T) {
	for _, c := range zeroTailCases {
		for _, zeros := range []int{8, 100, 4096, 70000} {
			t.Run(fmt.Sprint(c.name, zeros), func(t *testing.T) {
				sdir := filepath.Join(t.TempDir(), "sessions")
				fs := openT(t, sdir, nil)
				want := zeroTailRecords(c.n, c.big)
				if err := fs.Append(bg, "s", 1, want); err != nil {
					t.Fatal(err)
				}
				if c.cp {
					if err := fs.WriteCheckpoint(bg, "s", uint64(c.n-1), []byte("state")); err != nil {
						t.Fatal(err)
					}
				}
				if err := fs.Close(); err != nil {
					t.Fatal(err)
				}
				seg := segPath(sdir, "s", 1)
				whole := mustRead(t, seg)
				if err := os.Truncate(seg, int64(len(whole)+zeros)); err != nil {
					t.Fatal(err)
				}

				fs = openT(t, sdir, nil)
				if err := c.use(fs); err != nil {
					t.Fatalf("first use of a session whose segment ends in %d zero bytes = %v", zeros, err)
				}
				if next, err := fs.Next(bg, "s"); err != nil || next != uint64(c.n+1) {
					t.Fatalf("Next = %d, %v; want %d", next, err, c.n+1)
				}
				if b := mustRead(t, seg); !bytes.Equal(b, whole) {
					t.Fatalf("segment is %d bytes, want the %d before the zeros", len(b), len(whole))
				}
				kept := fmt.Sprintf("%s.torn-%d", seg, len(whole))
				if b, err := os.ReadFile(kept); err != nil || len(b) != zeros || !allZero(b) {
					t.Fatalf("kept tail %s: %d bytes, %v; want the %d zeros", kept, len(b), err, zeros)
				}
				if err := fs.Append(bg, "s", uint64(c.n+1), numbered(c.n+1, 1)); err != nil {
					t.Fatalf("Append after the cut = %v", err)
				}
				fs.Close()

				fs = openT(t, sdir, nil)
				got := readSession(t, fs, "s")
				if len(got) != c.n+1 {
					t.Fatalf("after restart the session holds %d records, want %d", len(got), c.n+1)
				}
				for i, r := range got {
					if r.Sequence != uint64(i+1) {
						t.Fatalf("record %d has sequence %d", i, r.Sequence)
					}
					if i < c.n && !bytes.Equal(r.Data, want[i].Data) {
						t.Fatalf("record %d data changed", i+1)
					}
				}
			})
		}
	}
}

// Zero bytes that something other than zero follows are no crash's tail
// (a zeroed region may have held acknowledged records), nor is a damaged
// frame followed by zeros: the session is refused as damaged at the first
// bad frame and nothing is rewritten or cut.
func TestSegmentZerosBeforeDataAreDamage(t *testing.T) {
	for _, c := range zeroTailCases {
		t.Run(c.name, func(t *testing.T) {
			sdir := filepath.Join(t.TempDir(), "sessions")
			fs := openT(t, sdir, nil)
			if err := fs.Append(bg, "s", 1, zeroTailRecords(c.n, c.big)); err != nil {
				t.Fatal(err)
			}
			if c.cp {
				if err := fs.WriteCheckpoint(bg, "s", uint64(c.n-1), []byte("state")); err != nil {
					t.Fatal(err)
				}
			}
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			seg := segPath(sdir, "s", 1)
			whole := mustRead(t, seg)
			offs := frameOffsets(t, seg)
			last := int(offs[len(offs)-1])
			flipped := bytes.Clone(whole)
			flipped[last+frameHeaderSize+2] ^= 1 // the last record's sequence
			for _, bad := range []struct {
				name string
				file []byte
				at   int
			}{
				{"zeros then a frame", concat(whole[:last], make([]byte, 4096), whole[last:]), last},
				{"zeros then a byte", concat(whole, make([]byte, 4096), []byte{1}), len(whole)},
				{"damaged last frame then zeros", concat(flipped, make([]byte, 4096)), last},
			} {
				t.Run(bad.name, func(t *testing.T) {
					if err := os.WriteFile(seg, bad.file, 0o600); err != nil {
						t.Fatal(err)
					}
					fs := openT(t, sdir, nil)
					err := c.use(fs)
					var de *DamagedError
					if !errors.As(err, &de) || de.File != seg || de.Offset != int64(bad.at) {
						t.Fatalf("first use = %v, want a *DamagedError at %s offset %d", err, seg, bad.at)
					}
					fs.Close()
					if b := mustRead(t, seg); !bytes.Equal(b, bad.file) {
						t.Fatalf("damaged segment was rewritten")
					}
					if torn, _ := filepath.Glob(seg + ".torn-*"); len(torn) != 0 {
						t.Fatalf("damage was cut as a torn tail: %v", torn)
					}
				})
			}
		})
	}
}

func concat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// A create whose first write never reached the disk while the segment's
// size did leaves a first segment of nothing but zeros: the session holds
// no record, so Sessions does not list it and its first append starts at
// sequence 1. Zeros that a frame follows are damage, and listed.
func TestSessionsZeroFirstSegment(t *testing.T) {
	sdir := filepath.Join(t.TempDir(), "sessions")
	fs := openT(t, sdir, nil)
	for _, id := range []string{"kept", "unborn", "damaged"} {
		if err := fs.Append(bg, id, 1, numbered(1, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segPath(sdir, "unborn", 1), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := segPath(sdir, "damaged", 1)
	if err := os.WriteFile(damaged, concat(make([]byte, 4096), mustRead(t, damaged)), 0o600); err != nil {
		t.Fatal(err)
	}

	fs = openT(t, sdir, nil)
	ids, err := fs.Sessions(bg)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[damaged kept]" {
		t.Fatalf("Sessions = %v, want [damaged kept]", ids)
	}
	if next, err := fs.Next(bg, "unborn"); err != nil || next != 1 {
		t.Fatalf("Next(unborn) = %d, %v; want 1", next, err)
	}
	if err := fs.Append(bg, "unborn", 1, numbered(1, 1)); err != nil {
		t.Fatalf("first append to the unborn session = %v", err)
	}
	var de *DamagedError
	if _, err := fs.Next(bg, "damaged"); !errors.As(err, &de) || de.Offset != 0 {
		t.Fatalf("Next(damaged) = %v, want a *DamagedError at offset 0", err)
	}
}

// A roll creates the next segment before the round's frames are written:
// a crash can leave it holding nothing but zeros (its size durable, its
// data not) while the previous segment lacks the round's first records,
// which were never acknowledged. The zero segment holds nothing: it is
// removed as an empty one would be, and appends go on densely.
func TestZeroSegmentPastRecordsRemoved(t *testing.T) {
	sdir := filepath.Join(t.TempDir(), "sessions")
	fill(t, sdir, "s", 3, nil)
	past := segPath(sdir, "s", 5)
	if err := os.WriteFile(past, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, sdir, nil)
	if next, err := fs.Next(bg, "s"); err != nil || next != 4 {
		t.Fatalf("Next = %d, %v; want 4", next, err)
	}
	if _, err := os.Stat(past); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("zero segment past the records: %v, want it removed", err)
	}
	if err := fs.Append(bg, "s", 4, numbered(4, 2)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	if got := readSession(t, openT(t, sdir, nil), "s"); len(got) != 5 {
		t.Fatalf("after restart the session holds %d records, want 5", len(got))
	}
}
