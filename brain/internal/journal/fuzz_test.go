package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func seedFrames() [][]byte {
	a := appendFrame(nil, &Record{Sequence: 1, Kind: "k", RecordedAtMs: 5, Data: json.RawMessage(`{"a":1}`)})
	b := appendFrame(nil, &Record{Sequence: 2, Kind: "turn_started", Data: json.RawMessage(`[]`), Origin: json.RawMessage(`{"o":true}`)})
	c := appendFrame(nil, &Record{Sequence: 3, Kind: "x"})
	return [][]byte{a, b, c, append(append(slices2(a), b...), c...), a[:5], {}}
}

func slices2(b []byte) []byte { return append([]byte(nil), b...) }

// FuzzDecodeFrame checks that the frame decoder never panics and that
// whatever it accepts re-encodes to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := decodeFrame(b, 1<<20)
		if err != nil {
			return
		}
		if n < frameHeaderSize || n > len(b) {
			t.Fatalf("decodeFrame size %d of %d bytes", n, len(b))
		}
		if got := appendFrame(nil, &r); !bytes.Equal(got, b[:n]) {
			t.Fatalf("re-encoded frame differs:\n got %x\nwant %x", got, b[:n])
		}
	})
}

// FuzzOpenSegment writes arbitrary bytes as a session's only segment and
// opens it: recovery must either succeed with a consistent session or
// report a *DamagedError, never panic or lose a complete valid prefix.
func FuzzOpenSegment(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		jdir := filepath.Join(dir, "s", "journal")
		os.MkdirAll(jdir, 0o700)
		path := filepath.Join(jdir, segmentName(1))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fs, err := OpenFileStore(dir, &Options{MaxRecordBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		next, err := fs.Next(bg, "s")
		if err != nil {
			var de *DamagedError
			if !errors.As(err, &de) || de.File != path || de.Offset < 0 || de.Offset > int64(len(b)) {
				t.Fatalf("Next = %v, want success or damage inside the file", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
				t.Fatalf("damaged segment was rewritten")
			}
			return
		}
		rs, err := fs.Read(bg, "s", 0, 0, 0)
		if err != nil || uint64(len(rs)) != next-1 {
			t.Fatalf("Read = %d records, %v; Next = %d", len(rs), err, next)
		}
		kept, _ := os.ReadFile(path)
		if !bytes.HasPrefix(b, kept) {
			t.Fatalf("recovery changed bytes before the cut")
		}
		if err := fs.Append(bg, "s", next, []Record{{Kind: "k"}}); err != nil {
			t.Fatalf("Append after recovery = %v", err)
		}
	})
}
