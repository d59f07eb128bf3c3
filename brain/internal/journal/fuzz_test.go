package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func seedFrames() [][]byte {
	a := appendFrame(nil, &Record{Sequence: 1, Kind: "k", RecordedAtMs: 5, Data: json.RawMessage(`{"a":1}`)})
	b := appendFrame(nil, &Record{Sequence: 2, Kind: "turn_started", Data: json.RawMessage(`[]`), Origin: json.RawMessage(`{"o":true}`)})
	c := appendFrame(nil, &Record{Sequence: 3, Kind: "x"})
	zeros := make([]byte, 600)
	return [][]byte{a, b, c, append(append(slices2(a), b...), c...), a[:5], {},
		append(slices2(a), zeros...), append(slices2(zeros[:40]), a...), append(append(slices2(a), zeros[:8]...), b...)}
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
// report a *DamagedError, never panic or lose a complete valid prefix; the
// session is listed exactly when it holds a record or is damaged.
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
		ids, err := fs.Sessions(bg)
		if err != nil {
			t.Fatal(err)
		}
		next, err := fs.Next(bg, "s")
		// Listed exactly when the session opens holding a record, or
		// damaged.
		if listed := slices.Contains(ids, "s"); listed != (err != nil || next > 1) {
			t.Fatalf("Sessions = %v before Next = %d, %v", ids, next, err)
		}
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
		if len(kept) != len(b) {
			return
		}
		// Zeros after whole frames (a size made durable without its
		// data) are cut: the session opens to the same records.
		zdir := t.TempDir()
		zpath := filepath.Join(zdir, "s", "journal", segmentName(1))
		os.MkdirAll(filepath.Dir(zpath), 0o700)
		if err := os.WriteFile(zpath, append(slices2(b), make([]byte, 1+len(b)%5000)...), 0o600); err != nil {
			t.Fatal(err)
		}
		zfs, err := OpenFileStore(zdir, &Options{MaxRecordBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer zfs.Close()
		if znext, err := zfs.Next(bg, "s"); err != nil || znext != next {
			t.Fatalf("with zeros after the frames: Next = %d, %v; want %d", znext, err, next)
		}
		// So is a write whose first sectors reached the disk and the rest
		// reads as zero, and so are the frames of a crashed round that
		// rolled: a segment after it that holds nothing is removed.
		big := appendFrame(nil, &Record{Sequence: next, Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("d", 1200+len(b)%700) + `"`)})
		tdir := t.TempDir()
		tpath := filepath.Join(tdir, "s", "journal", segmentName(1))
		os.MkdirAll(filepath.Dir(tpath), 0o700)
		if err := os.WriteFile(tpath, append(slices2(b), sectorTear(big, len(b), 1+len(b)%2)...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tdir, "s", "journal", segmentName(next+1)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		tfs, err := OpenFileStore(tdir, &Options{MaxRecordBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer tfs.Close()
		if tnext, err := tfs.Next(bg, "s"); err != nil || tnext != next {
			t.Fatalf("with a torn round after the frames: Next = %d, %v; want %d", tnext, err, next)
		}
	})
}

// FuzzSyncPoint feeds arbitrary bytes to the sync point marker's decoder:
// it answers a log number of at least 1 only for a marker as
// encodeSyncPoint writes it, and a *LogDamagedError otherwise.
func FuzzSyncPoint(f *testing.F) {
	f.Add(encodeSyncPoint(7))
	f.Add(encodeSyncPoint(0)[:19])
	f.Add([]byte("BRAINSP1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, syncPointName), b, 0o600); err != nil {
			t.Fatal(err)
		}
		n, err := readSyncPoint(dir)
		if err != nil {
			var le *LogDamagedError
			if !errors.As(err, &le) {
				t.Fatalf("readSyncPoint = %v, want a *LogDamagedError", err)
			}
			return
		}
		if n < 1 || !bytes.Equal(encodeSyncPoint(binary.LittleEndian.Uint64(b[12:])), b) {
			t.Fatalf("readSyncPoint accepted %x as %d", b, n)
		}
	})
}

// seedLogs are commit log files: valid entries, a torn tail, a corrupt
// entry, zeros.
func seedLogs() [][]byte {
	f1 := appendFrame(nil, &Record{Sequence: 1, Kind: "k", RecordedAtMs: 5, Data: json.RawMessage(`{"a":1}`)})
	f2 := appendFrame(nil, &Record{Sequence: 2, Kind: "turn_started", Data: json.RawMessage(`[]`), Origin: json.RawMessage(`{"o":true}`)})
	e1 := appendLogEntry(nil, "s", 1, 0, f1)
	e2 := appendLogEntry(nil, "s", 1, int64(len(f1)), f2)
	e3 := appendLogEntry(nil, "t", 1, 0, append(slices2(f1), f2...))
	two := append(slices2(e1), e2...)
	bad := slices2(two)
	bad[len(e1)+logEntryHeader+5] ^= 1
	return [][]byte{e1, two, append(slices2(two), e3...), append(slices2(e1), e2[:7]...), bad, make([]byte, 16), {}}
}

// FuzzDecodeLogEntry checks that the log entry decoder never panics and
// that whatever it accepts re-encodes to the same bytes.
func FuzzDecodeLogEntry(f *testing.F) {
	for _, s := range seedLogs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := decodeLogEntry(b, 1<<20)
		if err != nil {
			return
		}
		if n < logEntryHeader+logEntryFixed || n > len(b) || e.count < 1 {
			t.Fatalf("decodeLogEntry size %d of %d bytes, %d frames", n, len(b), e.count)
		}
		if got := appendLogEntry(nil, e.id, e.segFirst, e.off, e.frames); !bytes.Equal(got, b[:n]) {
			t.Fatalf("re-encoded entry differs:\n got %x\nwant %x", got, b[:n])
		}
	})
}

// FuzzReplayLog writes arbitrary bytes as the only commit log file and
// opens the store: it either refuses with a *LogDamagedError naming the
// file and an offset inside it, or replays, cutting only a torn tail, and
// every session the log named opens (or reports its own damage).
func FuzzReplayLog(f *testing.F) {
	for _, s := range seedLogs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		ldir := filepath.Join(dir, commitLogDir)
		os.MkdirAll(ldir, 0o700)
		path := filepath.Join(ldir, logName(1))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		fs, err := OpenFileStore(dir, &Options{MaxRecordBytes: 1 << 20})
		if err != nil {
			var le *LogDamagedError
			if !errors.As(err, &le) || le.File != path || le.Offset < 0 || le.Offset >= int64(max(len(b), 1)) {
				t.Fatalf("OpenFileStore = %v, want success or damage inside the log", err)
			}
			return
		}
		defer fs.Close()
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("replayed log not retired: %v", err)
		}
		if kept, _ := filepath.Glob(path + ".torn-*"); len(kept) > 0 {
			var off int
			fmt.Sscanf(kept[0][len(path+".torn-"):], "%d", &off)
			if got, _ := os.ReadFile(kept[0]); !bytes.Equal(got, b[off:keptEnd(len(b), off+zeroTrimmed(b[off:]))]) || len(got) == 0 {
				t.Fatalf("kept tail differs from the cut bytes (without the zeros after them)")
			}
		}
		ids, err := fs.Sessions(bg)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := fs.Next(bg, id); err != nil && !errors.Is(err, ErrDamaged) {
				t.Fatalf("Next(%s) = %v", id, err)
			}
		}
	})
}
