package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// noSyncPoints keeps every log file until the test decides.
var noSyncPoints = &Options{SegmentBytes: 300, SyncPointInterval: time.Hour, CommitLogBytes: 1 << 40}

func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, commitLogDir, "*.log"))
	slices.Sort(m)
	return m
}

// readAll reads every record of id and checks they are numbered 1..n.
func readAll(t *testing.T, fs *FileStore, id string, n int) {
	t.Helper()
	rs, err := fs.Read(bg, id, 0, 0, 0)
	if err != nil || len(rs) != n {
		t.Fatalf("Read(%s) = %d records, %v; want %d", id, len(rs), err, n)
	}
	for i, r := range rs {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); r.Sequence != uint64(i+1) || string(r.Data) != want {
			t.Fatalf("%s record %d = %d %s, want %s", id, i, r.Sequence, r.Data, want)
		}
	}
}

// crashedStore appends n records to each of ids one by one (rolling
// segments) with segment writes passed through hook, then stops without a
// sync point, like a crash after the last acknowledgement.
func crashedStore(t *testing.T, dir string, ids []string, n int, hook func([]byte) []byte) {
	t.Helper()
	fs, err := OpenFileStore(dir, noSyncPoints)
	if err != nil {
		t.Fatal(err)
	}
	fs.segWriteHook = hook
	for i := 1; i <= n; i++ {
		for _, id := range ids {
			if err := fs.Append(bg, id, uint64(i), numbered(i, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fs.closeNoSync()
	if len(logFiles(t, dir)) == 0 {
		t.Fatal("no commit log file after a crash")
	}
}

func TestReplayRestoresLostSegmentWrites(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"a", "b", "c"}
	crashedStore(t, dir, ids, 20, func([]byte) []byte { return nil })
	if n := segmentRecords(t, dir); n != 0 {
		t.Fatalf("segments hold %d records before replay, want 0", n)
	}
	fs := openT(t, dir, noSyncPoints)
	if logs := logFiles(t, dir); len(logs) != 0 {
		t.Errorf("log files %v left after replay's sync point", logs)
	}
	for _, id := range ids {
		if next, err := fs.Next(bg, id); err != nil || next != 21 {
			t.Fatalf("Next(%s) = %d, %v", id, next, err)
		}
		readAll(t, fs, id, 20)
	}
	if err := fs.Append(bg, "a", 21, numbered(21, 1)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 21)
}

func TestReplaySkipsPresentFrames(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a"}, 10, nil)
	before := map[string][]byte{}
	segs, _ := filepath.Glob(filepath.Join(dir, "a", "journal", "*"))
	for _, p := range segs {
		before[p], _ = os.ReadFile(p)
	}
	fs := openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 10)
	after, _ := filepath.Glob(filepath.Join(dir, "a", "journal", "*"))
	if !slices.Equal(segs, after) {
		t.Fatalf("segment files %v became %v", segs, after)
	}
	for _, p := range segs {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, before[p]) {
			t.Errorf("%s was rewritten by replay", p)
		}
	}
}

func TestReplayRewritesTornSegmentTail(t *testing.T) {
	dir := t.TempDir()
	// Every segment write lands with its last byte flipped and every third
	// one half written: a segment tail that is torn or wrong.
	n := 0
	crashedStore(t, dir, []string{"a"}, 12, func(b []byte) []byte {
		n++
		c := slices.Clone(b)
		c[len(c)-1] ^= 0xff
		if n%3 == 0 {
			c = c[:len(c)/2]
		}
		return c
	})
	fs := openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 12)
	torn, _ := filepath.Glob(filepath.Join(dir, "a", "journal", "*.torn-*"))
	if len(torn) == 0 {
		t.Error("no cut segment bytes kept")
	}
}

func TestLogTornTailTruncatedAndKept(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a"}, 5, func([]byte) []byte { return nil })
	logs := logFiles(t, dir)
	path := logs[len(logs)-1]
	orig := logBytes(t, path)
	entry := appendLogEntry(nil, "a", 1, int64(len(orig)), appendFrame(nil, &Record{Sequence: 6, Kind: "k"}))
	for _, cut := range []int{3, logEntryHeader, len(entry) - 1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			d := t.TempDir()
			os.MkdirAll(filepath.Join(d, commitLogDir), 0o700)
			p := filepath.Join(d, commitLogDir, filepath.Base(path))
			os.WriteFile(p, append(slices.Clone(orig), entry[:cut]...), 0o600)
			fs := openT(t, d, noSyncPoints)
			readAll(t, fs, "a", 5)
			kept := fmt.Sprintf("%s.torn-%d", p, len(orig))
			if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, entry[:cut]) {
				t.Fatalf("kept bytes %s = %q, %v; want the %d cut bytes", kept, got, err, cut)
			}
		})
	}
	// A zero-filled tail (a size update that outran the data, or the
	// unused part of a preallocated file) holds nothing: nothing is kept.
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, commitLogDir), 0o700)
	p := filepath.Join(d, commitLogDir, filepath.Base(path))
	os.WriteFile(p, append(slices.Clone(orig), make([]byte, 100)...), 0o600)
	fs := openT(t, d, noSyncPoints)
	readAll(t, fs, "a", 5)
	if kept, _ := filepath.Glob(p + ".torn-*"); len(kept) != 0 {
		t.Errorf("a zero tail was kept as %v", kept)
	}
}

// entryOffsets answers the offset of each entry of the log bytes b.
func entryOffsets(t *testing.T, b []byte) []int {
	t.Helper()
	var offs []int
	for off := 0; off < len(b); {
		_, n, err := decodeLogEntry(b[off:], DefaultMaxRecordBytes)
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
		off += n
	}
	return offs
}

// logBytes reads a log file without the zeros after its last entry (a
// preallocated file's unused part).
func logBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b[:zeroTrimmed(b)]
}

func TestLogCorruptEntryRefused(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a", "b"}, 3, func([]byte) []byte { return nil })
	path := logFiles(t, dir)[0]
	whole, _ := os.ReadFile(path)
	b := logBytes(t, path)
	offs := entryOffsets(t, b)
	if len(offs) < 3 {
		t.Fatalf("%d entries", len(offs))
	}
	// A flipped byte in an entry's frames, then in the last entry (with
	// the file's zero tail, if it was preallocated, after it): a complete
	// entry that does not check out is never cut as a torn tail.
	for _, i := range []int{1, len(offs) - 1} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			bad := slices.Clone(whole)
			bad[offs[i]+logEntryHeader+logEntryFixed+3] ^= 0x10
			os.WriteFile(path, bad, 0o600)
			fs, err := OpenFileStore(dir, noSyncPoints)
			var le *LogDamagedError
			if err == nil {
				fs.Close()
			}
			if !errors.As(err, &le) || !errors.Is(err, ErrLogDamaged) || le.File != path || le.Offset != int64(offs[i]) {
				t.Fatalf("OpenFileStore = %v, want damage at %s offset %d", err, path, offs[i])
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
				t.Errorf("damaged log was rewritten")
			}
		})
	}
	os.WriteFile(path, whole, 0o600)
	fs := openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 3)
	readAll(t, fs, "b", 3)
}

func TestDeleteNotReplayed(t *testing.T) {
	dir := t.TempDir()
	fs, err := OpenFileStore(dir, noSyncPoints)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(bg, "a", 1, numbered(100, 5)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Delete(bg, "a"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(bg, "a", 1, numbered(1, 2)); err != nil {
		t.Fatal(err)
	}
	fs.closeNoSync()
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 2)
}

func TestSyncPointRetiresLogs(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, &Options{CommitLogBytes: 4096, SyncPointInterval: time.Hour})
	for i := 1; i <= 200; i++ {
		if err := fs.Append(bg, "a", uint64(i), numbered(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	st := fs.Stats()
	if st.SyncPoints < 3 {
		t.Errorf("%d sync points for ~%d log bytes", st.SyncPoints, 200*40)
	}
	if logs := logFiles(t, dir); len(logs) > 1 {
		t.Errorf("log files %v, want at most the current one", logs)
	}
	fs.closeNoSync()
	fs = openT(t, dir, nil)
	readAll(t, fs, "a", 200)
}

// TestEmptyRolledSegmentRemoved: a roll whose records never became durable
// leaves an empty final segment past the records; it holds nothing and is
// removed.
func TestEmptyRolledSegmentRemoved(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "a", 3, nil)
	extra := segPath(dir, "a", 7)
	os.WriteFile(extra, nil, 0o600)
	fs := openT(t, dir, nil)
	if next, err := fs.Next(bg, "a"); err != nil || next != 4 {
		t.Fatalf("Next = %d, %v; want 4", next, err)
	}
	if _, err := os.Stat(extra); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty segment past the records is still there: %v", err)
	}
	if err := fs.Append(bg, "a", 4, numbered(4, 1)); err != nil {
		t.Fatal(err)
	}
	readAll(t, fs, "a", 4)
}

// An entry whose length field was damaged to run past the file (or past
// the bound) looks like a write cut short, but its frames pass its
// checksum: it is damage, refused, never cut with the acknowledged
// entries after it (whose segment writes the crash lost here). The last
// entry's too.
func TestLogEntryWithDamagedLengthRefused(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a", "b"}, 3, func([]byte) []byte { return nil })
	path := logFiles(t, dir)[0]
	whole, _ := os.ReadFile(path)
	b := logBytes(t, path)
	offs := entryOffsets(t, b)
	for _, c := range []struct {
		entry  int
		length uint32
	}{
		{1, uint32(len(whole))},
		{1, 1<<32 - 1},
		{len(offs) - 1, uint32(len(whole))},
	} {
		t.Run(fmt.Sprint(c.entry, "-", c.length), func(t *testing.T) {
			bad := slices.Clone(whole)
			binary.LittleEndian.PutUint32(bad[offs[c.entry]:], c.length)
			os.WriteFile(path, bad, 0o600)
			fs, err := OpenFileStore(dir, noSyncPoints)
			var le *LogDamagedError
			if err == nil {
				fs.Close()
			}
			if !errors.As(err, &le) || le.File != path || le.Offset != int64(offs[c.entry]) {
				t.Fatalf("OpenFileStore = %v, want damage at %s offset %d", err, path, offs[c.entry])
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
				t.Errorf("damaged log was rewritten")
			}
		})
	}
	os.WriteFile(path, whole, 0o600)
	fs := openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 3)
	readAll(t, fs, "b", 3)
}
