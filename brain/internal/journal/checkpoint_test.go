package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckpointSkipsPrefix: with a matching checkpoint, open reads only
// the frames after the covered prefix (a flipped byte inside the prefix is
// not noticed at open), and the first Read of the prefix verifies it and
// refuses the session.
func TestCheckpointSkipsPrefix(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 15)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(bg, "s", 10, []byte("p")); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	path := segPath(dir, "s", 1)
	offs := frameOffsets(t, path)
	b, _ := os.ReadFile(path)
	b[offs[2]+frameHeaderSize+5] ^= 0x40
	os.WriteFile(path, b, 0o600)

	fs = openT(t, dir, nil)
	if n, err := fs.Next(bg, "s"); err != nil || n != 16 {
		t.Fatalf("Next = %d, %v; want 16 (prefix not scanned)", n, err)
	}
	if through, p, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 10 || string(p) != "p" {
		t.Fatalf("ReadCheckpoint = %d, %q, %v", through, p, err)
	}
	if rs, err := fs.Read(bg, "s", 10, 0, 0); err != nil || len(rs) != 5 || rs[0].Sequence != 11 {
		t.Fatalf("Read after the checkpoint = %d records, %v", len(rs), err)
	}
	var de *DamagedError
	if _, err := fs.Read(bg, "s", 0, 0, 0); !errors.As(err, &de) || de.Offset != offs[2] {
		t.Fatalf("Read of the damaged prefix = %v, want a *DamagedError at %d", err, offs[2])
	}
	// The session is refused as a whole from then on: nothing is appended
	// after the damage. Without a usable checkpoint it is scanned in full
	// and refused at open.
	if err := fs.Append(bg, "s", 16, numbered(16, 1)); !errors.As(err, &de) {
		t.Fatalf("Append after the damaged prefix = %v, want a *DamagedError", err)
	}
	fs.Close()
	os.Remove(filepath.Join(dir, "s", checkpointName))
	fs = openT(t, dir, nil)
	wantDamaged(t, fs, "s", path, offs[2], "checksum")
}

// TestCheckpointTail: after a checkpoint's prefix, a torn tail is cut and
// a damaged frame refused exactly as without a checkpoint.
func TestCheckpointTail(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 12)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(bg, "s", 12, []byte("p")); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	path := segPath(dir, "s", 1)
	orig, _ := os.ReadFile(path)
	torn := appendFrame(nil, &Record{Sequence: 13, Kind: "k", Data: json.RawMessage(`{"n":13}`)})
	os.WriteFile(path, append(append([]byte(nil), orig...), torn[:len(torn)-2]...), 0o600)
	fs = openT(t, dir, nil)
	if n, err := fs.Next(bg, "s"); err != nil || n != 13 {
		t.Fatalf("Next with a torn tail = %d, %v; want 13", n, err)
	}
	if _, err := os.Stat(fmt.Sprintf("%s.torn-%d", path, len(orig))); err != nil {
		t.Fatalf("torn tail not kept: %v", err)
	}
	if _, _, err := fs.ReadCheckpoint(bg, "s"); err != nil {
		t.Fatalf("ReadCheckpoint after the cut = %v", err)
	}
	fs.Close()

	bad := append([]byte(nil), torn...)
	bad[frameHeaderSize+3] ^= 1
	os.WriteFile(path, append(append([]byte(nil), orig...), bad...), 0o600)
	fs = openT(t, dir, nil)
	wantDamaged(t, fs, "s", path, int64(len(orig)), "checksum")
}

// TestCheckpointReopenReadsAcrossSegments reads every record after opening
// with a checkpoint in the middle of a multi-segment journal.
func TestCheckpointReopenReadsAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{SegmentBytes: 300}
	fs := openT(t, dir, opts)
	for i := 1; i <= 40; i++ {
		if err := fs.Append(bg, "s", uint64(i), numbered(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, through := range []uint64{1, 13, 25, 40} {
		if err := fs.WriteCheckpoint(bg, "s", through, []byte{1}); err != nil {
			t.Fatal(err)
		}
		fs.Close()
		fs = openT(t, dir, opts)
		if n, err := fs.Next(bg, "s"); err != nil || n != 41 {
			t.Fatalf("through %d: Next = %d, %v", through, n, err)
		}
		if s, _ := fs.session("s"); s.cold.seq != through+1 {
			t.Fatalf("through %d: open did not start after the checkpoint (cold %+v)", through, s.cold)
		}
		for _, after := range []uint64{through, 0, 7} {
			rs, err := fs.Read(bg, "s", after, 0, 0)
			if err != nil || uint64(len(rs)) != 40-after {
				t.Fatalf("through %d: Read after %d = %d records, %v", through, after, len(rs), err)
			}
			for i, r := range rs {
				if r.Sequence != after+uint64(i)+1 || string(r.Data) != fmt.Sprintf(`{"n":%d}`, r.Sequence) {
					t.Fatalf("through %d: record %+v", through, r)
				}
			}
		}
	}
}

// TestCheckpointVersion1 still reads a checkpoint written in version 1
// (no last frame offset); open then scans every frame.
func TestCheckpointVersion1(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	b := encodeCheckpoint(3, []stamp{{first: 1, size: int64(len(mustRead(t, segPath(dir, "s", 1))))}}, 0, []byte("v1"))
	v1 := append([]byte(checkpointMagic1), b[8:12]...)
	v1 = append(v1, b[12:len(b)-4-2-8]...) // drop the last frame offset
	v1 = append(v1, b[len(b)-4-2:]...)
	binary.LittleEndian.PutUint32(v1[8:], crc32.Checksum(v1[12:], castagnoli))
	os.WriteFile(filepath.Join(dir, "s", checkpointName), v1, 0o600)
	fs = openT(t, dir, nil)
	if through, p, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 3 || string(p) != "v1" {
		t.Fatalf("ReadCheckpoint(v1) = %d, %q, %v", through, p, err)
	}
	if s, _ := fs.session("s"); s.cold.seq != 0 {
		t.Fatalf("a version 1 checkpoint skipped the scan")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckpointThroughTailReadsNothing: a checkpoint through the last
// record appended takes that frame's place from the append (no read of
// the segment) and is byte for byte the checkpoint a scan of the segment
// gives, across a roll to a new segment and after a reopen.
func TestCheckpointThroughTailReadsNothing(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, &Options{SegmentBytes: 4096})
	ckpt := filepath.Join(dir, "s", checkpointName)
	next := uint64(1)
	for round := range 6 {
		n := 7 + round*9
		if err := fs.Append(bg, "s", next, numbered(int(next), n)); err != nil {
			t.Fatal(err)
		}
		next += uint64(n)
		s, err := fs.readySession("s")
		if err != nil {
			t.Fatal(err)
		}
		tail := s.tail
		s.mu.Unlock()
		fs.release(s)
		if tail.seq != next-1 {
			t.Fatalf("round %d: tail at %d, want %d", round, tail.seq, next-1)
		}
		if err := fs.WriteCheckpoint(bg, "s", next-1, []byte("p")); err != nil {
			t.Fatal(err)
		}
		fast, _ := os.ReadFile(ckpt)
		// The same checkpoint with the frame found by a scan.
		s, _ = fs.readySession("s")
		s.tail = indexEntry{}
		s.mu.Unlock()
		fs.release(s)
		if err := fs.WriteCheckpoint(bg, "s", next-1, []byte("p")); err != nil {
			t.Fatal(err)
		}
		scanned, _ := os.ReadFile(ckpt)
		if string(fast) != string(scanned) {
			t.Fatalf("round %d: checkpoint from the tail differs from the scanned one:\n%x\n%x", round, fast, scanned)
		}
	}
	fs.Close()
	fs = openT(t, dir, nil)
	through, payload, err := fs.ReadCheckpoint(bg, "s")
	if err != nil || through != next-1 || string(payload) != "p" {
		t.Fatalf("ReadCheckpoint after reopen = %d %q %v", through, payload, err)
	}
}
