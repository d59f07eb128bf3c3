package journal

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecodeCheckpoint: the checkpoint decoder never panics, and what it
// accepts in the current version is exactly what encodeCheckpoint writes
// for the values it decoded.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(7, []stamp{{first: 1, size: 300}, {first: 5, size: 90}}, 60, []byte(`{"next":8}`)), false)
	f.Add(encodeCheckpoint(1, nil, -1, nil), false)
	f.Add([]byte(checkpointMagic1+"\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		b = slices.Clone(b)
		if fixSum && len(b) >= 12 {
			// Past the checksum, to the parse behind it.
			binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
		}
		cp, err := decodeCheckpoint(b)
		if err != nil || string(b[:8]) != checkpointMagic {
			return
		}
		if again := encodeCheckpoint(cp.through, cp.stamps, cp.lastOff, cp.payload); string(again) != string(b) {
			t.Fatalf("decoded %+v from %x, which encodes to %x", cp, b, again)
		}
	})
}

// FuzzCheckpointFile opens a store whose checkpoint file holds any bytes
// (with a checksum that checks out, or not) beside an intact journal of
// two segments: whatever the checkpoint claims, the store opens, answers
// the journal's records and end exactly, and answers a checkpoint only
// if it covers committed records.
func FuzzCheckpointFile(f *testing.F) {
	fixture := f.TempDir()
	ctx := context.Background()
	fs, err := OpenFileStore(fixture, &Options{SegmentBytes: 600})
	if err != nil {
		f.Fatal(err)
	}
	for i := 1; i <= 12; i++ {
		r := Record{Kind: "k", RecordedAtMs: int64(i), Data: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"0123456789012345678901234567890123456789"}`, i))}
		if err := fs.Append(ctx, "s", uint64(i), []Record{r}); err != nil {
			f.Fatal(err)
		}
		if i == 9 {
			if err := fs.WriteCheckpoint(ctx, "s", 9, []byte(`{"through":9}`)); err != nil {
				f.Fatal(err)
			}
		}
	}
	want, err := fs.Read(ctx, "s", 0, 0, 0)
	if err != nil || len(want) != 12 {
		f.Fatalf("fixture read %d records: %v", len(want), err)
	}
	if err := fs.Close(); err != nil {
		f.Fatal(err)
	}
	files := map[string][]byte{}
	if err := filepath.WalkDir(fixture, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixture, p)
		b, err := os.ReadFile(p)
		files[rel] = b
		return err
	}); err != nil {
		f.Fatal(err)
	}
	ck := files[filepath.Join("s", checkpointName)]
	if ck == nil {
		f.Fatal("the fixture has no checkpoint file")
	}
	if segs, _ := filepath.Glob(filepath.Join(fixture, "s", "journal", "*.segment")); len(segs) < 2 {
		f.Fatalf("the fixture has %d segments, want 2 or more", len(segs))
	}
	f.Add(ck, false)
	f.Add(ck[:len(ck)-1], true)
	f.Add(encodeCheckpoint(12, []stamp{{first: 1, size: -1}}, 0, nil), false)
	f.Add(encodeCheckpoint(9, []stamp{{first: 1, size: 1 << 40}}, 1<<39, nil), false)
	f.Fuzz(func(t *testing.T, b []byte, fixSum bool) {
		b = slices.Clone(b)
		if fixSum && len(b) >= 12 {
			binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b[12:], castagnoli))
		}
		dir := t.TempDir()
		for rel, data := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if rel == filepath.Join("s", checkpointName) {
				data = b
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := OpenFileStore(dir, &Options{SegmentBytes: 600})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		if through, _, err := fs.ReadCheckpoint(ctx, "s"); err == nil && (through == 0 || through > 12) {
			t.Fatalf("a checkpoint through %d of 12 records was answered", through)
		}
		got, err := fs.Read(ctx, "s", 0, 0, 0)
		if err != nil {
			t.Fatalf("read beside a checkpoint of %x: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the checkpoint %x changed the records read:\n%+v\n%+v", b, got, want)
		}
		if next, err := fs.Next(ctx, "s"); err != nil || next != 13 {
			t.Fatalf("Next = %d, %v; want 13", next, err)
		}
	})
}
