package journal

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A checkpoint file far larger than any checkpoint the store writes (a
// sparse file of 1 TiB in its place) is no checkpoint: the session opens
// from its segments with every record, without reading the file into
// memory, ReadCheckpoint answers ErrNotFound, and the next checkpoint
// replaces it.
func TestHugeCheckpointIgnored(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 50)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(bg, "s", 50, []byte("projection")); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "s", checkpointName)
	const huge = 1 << 40
	if err := os.Truncate(ck, huge); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", int64(huge), err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fs = openT(t, dir, nil)
	readAll(t, fs, "s", 50)
	if _, _, err := fs.ReadCheckpoint(bg, "s"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadCheckpoint over a %d-byte file = %v; want ErrNotFound", int64(huge), err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("opening the session allocated %d bytes; want the checkpoint left unread", grew)
	}
	if err := fs.WriteCheckpoint(bg, "s", 50, []byte("again")); err != nil {
		t.Fatal(err)
	}
	if through, p, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 50 || string(p) != "again" {
		t.Errorf("ReadCheckpoint after a new checkpoint = %d, %q, %v", through, p, err)
	}
	if fi, err := os.Stat(ck); err != nil || fi.Size() > 4096 {
		t.Errorf("checkpoint after it was written again: %v, %v; want it cut to its length", fi, err)
	}
}

// A checkpoint with a payload larger than the piece an open checks at a
// time still vouches for its prefix at open (its checksum is computed in
// pieces), and one whose payload was damaged is ignored.
func TestLargeCheckpointCheckedInPieces(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 10)); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 3*checkpointChunk+17)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	if err := fs.WriteCheckpoint(bg, "s", 10, payload); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	cold := func() uint64 {
		t.Helper()
		fs := openT(t, dir, nil)
		if n, err := fs.Next(bg, "s"); err != nil || n != 11 {
			t.Fatalf("Next = %d, %v", n, err)
		}
		fs.mu.Lock()
		s := fs.sessions["s"]
		fs.mu.Unlock()
		s.mu.Lock()
		seq := s.cold.seq
		s.mu.Unlock()
		readAll(t, fs, "s", 10)
		fs.Close()
		return seq
	}
	if seq := cold(); seq != 11 {
		t.Errorf("prefix vouched for by the checkpoint ends before %d, want 11", seq)
	}
	ck := filepath.Join(dir, "s", checkpointName)
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-checkpointChunk-5] ^= 1
	if err := os.WriteFile(ck, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if seq := cold(); seq != 0 {
		t.Errorf("a damaged checkpoint vouched for records before %d", seq)
	}
}
