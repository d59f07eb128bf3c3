package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var bg = context.Background()

func openT(t *testing.T, dir string, opts *Options) *FileStore {
	t.Helper()
	fs, err := OpenFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

func numbered(from, n int) []Record {
	rs := make([]Record, n)
	for i := range rs {
		rs[i] = Record{Kind: "k", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, from+i))}
	}
	return rs
}

// fill writes n records to id in a fresh store and closes it.
func fill(t *testing.T, dir, id string, n int, opts *Options) {
	t.Helper()
	fs, err := OpenFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(bg, id, 1, numbered(1, n)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
}

func segPath(dir, id string, first uint64) string {
	return filepath.Join(dir, id, "journal", segmentName(first))
}

// frameOffsets lists the offset of every frame in a segment file.
func frameOffsets(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for off := 0; off < len(b); {
		_, n, err := decodeFrame(b[off:], DefaultMaxRecordBytes)
		if err != nil {
			t.Fatalf("frameOffsets(%s) at %d: %v", path, off, err)
		}
		offs = append(offs, int64(off))
		off += n
	}
	return offs
}

func wantDamaged(t *testing.T, fs *FileStore, id, file string, off int64, reason string) {
	t.Helper()
	_, err := fs.Next(bg, id)
	var de *DamagedError
	if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("Next(%s) = %v, want a *DamagedError", id, err)
	}
	if de.File != file || de.Offset != off || !strings.Contains(de.Reason, reason) {
		t.Fatalf("damage = %s at %d (%s), want %s at %d (%s)", de.File, de.Offset, de.Reason, file, off, reason)
	}
	if _, err := fs.Read(bg, id, 0, 0, 0); !errors.As(err, &de) {
		t.Errorf("Read of a damaged session = %v", err)
	}
	if err := fs.Append(bg, id, 1, numbered(1, 1)); !errors.As(err, &de) {
		t.Errorf("Append to a damaged session = %v", err)
	}
}

// healthyBeside checks that a second session in the same directory opens
// and works normally.
func healthyBeside(t *testing.T, fs *FileStore, id string, n int) {
	t.Helper()
	next, err := fs.Next(bg, id)
	if err != nil || next != uint64(n+1) {
		t.Fatalf("healthy session Next = %d, %v; want %d", next, err, n+1)
	}
	if err := fs.Append(bg, id, next, numbered(n+1, 1)); err != nil {
		t.Fatalf("healthy session Append = %v", err)
	}
	ids, _ := fs.Sessions(bg)
	if len(ids) < 2 {
		t.Errorf("Sessions = %v, want damaged and healthy sessions listed", ids)
	}
}

func TestTornFinalFrameTruncatedAndKept(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 5, nil)
	path := segPath(dir, "s", 1)
	orig, _ := os.ReadFile(path)
	torn := appendFrame(nil, &Record{Sequence: 6, Kind: "k", Data: json.RawMessage(`{"n":6}`)})
	for _, cut := range []int{3, frameHeaderSize, len(torn) - 1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			os.WriteFile(path, append(slices.Clone(orig), torn[:cut]...), 0o600)
			fs := openT(t, dir, nil)
			if n, err := fs.Next(bg, "s"); err != nil || n != 6 {
				t.Fatalf("Next = %d, %v; want 6", n, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
				t.Fatalf("segment is %d bytes after recovery, want %d", len(got), len(orig))
			}
			kept := fmt.Sprintf("%s.torn-%d", path, len(orig))
			if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, torn[:cut]) {
				t.Fatalf("kept bytes %s = %q, %v; want the %d cut bytes", kept, got, err, cut)
			}
			os.Remove(kept)
			if err := fs.Append(bg, "s", 6, numbered(6, 1)); err != nil {
				t.Fatalf("Append after recovery = %v", err)
			}
			if rs, _ := fs.Read(bg, "s", 0, 0, 0); len(rs) != 6 || string(rs[5].Data) != `{"n":6}` {
				t.Fatalf("Read after recovery = %d records", len(rs))
			}
			fs.Close()
			os.WriteFile(path, orig, 0o600)
		})
	}
}

func TestFlippedByteRefused(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "bad", 5, nil)
	fill(t, dir, "good", 3, nil)
	path := segPath(dir, "bad", 1)
	offs := frameOffsets(t, path)
	b, _ := os.ReadFile(path)
	// Flip a byte inside the payload of frame 3, and in the last frame:
	// a complete frame with a bad checksum is refused even at the tail.
	for i, frame := range []int{2, 4} {
		t.Run(fmt.Sprint(frame+1), func(t *testing.T) {
			damaged := slices.Clone(b)
			damaged[offs[frame]+frameHeaderSize+5] ^= 0x40
			os.WriteFile(path, damaged, 0o600)
			fs := openT(t, dir, nil)
			wantDamaged(t, fs, "bad", path, offs[frame], "checksum")
			healthyBeside(t, fs, "good", 3+i)
			if got, _ := os.ReadFile(path); !bytes.Equal(got, damaged) {
				t.Errorf("damaged segment was rewritten")
			}
			fs.Close()
		})
	}
}

func TestSequenceGapRefused(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "good", 2, nil)
	jdir := filepath.Join(dir, "gap", "journal")
	os.MkdirAll(jdir, 0o700)
	var b []byte
	var gapAt int
	for _, seq := range []uint64{1, 2, 4} {
		if seq == 4 {
			gapAt = len(b)
		}
		b = appendFrame(b, &Record{Sequence: seq, Kind: "k"})
	}
	path := filepath.Join(jdir, segmentName(1))
	os.WriteFile(path, b, 0o600)
	fs := openT(t, dir, nil)
	wantDamaged(t, fs, "gap", path, int64(gapAt), "not dense")
	healthyBeside(t, fs, "good", 2)

	// A gap between segments: the second segment starts too late.
	os.WriteFile(path, b[:gapAt], 0o600)
	second := filepath.Join(jdir, segmentName(4))
	os.WriteFile(second, appendFrame(nil, &Record{Sequence: 4, Kind: "k"}), 0o600)
	fs2 := openT(t, t.TempDir(), nil)
	fs2.dir = dir
	wantDamaged(t, fs2, "gap", second, 0, "not dense")
}

func TestShortNonFinalSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{SegmentBytes: 200}
	fs := openT(t, dir, opts)
	for i := 1; i <= 12; i++ {
		if err := fs.Append(bg, "s", uint64(i), numbered(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, dir, "good", 4, opts)
	fs.Close()
	entries, _ := os.ReadDir(filepath.Join(dir, "s", "journal"))
	if len(entries) < 3 {
		t.Fatalf("%d segments, want several", len(entries))
	}
	first := filepath.Join(dir, "s", "journal", entries[0].Name())
	offs := frameOffsets(t, first)
	fi, _ := os.Stat(first)
	os.Truncate(first, fi.Size()-3)
	fs = openT(t, dir, opts)
	wantDamaged(t, fs, "s", first, offs[len(offs)-1], "non-final")
	healthyBeside(t, fs, "good", 4)
	if fi2, _ := os.Stat(first); fi2.Size() != fi.Size()-3 {
		t.Errorf("short segment was rewritten")
	}
}

func TestCheckpointCorruptOrStale(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteCheckpoint(bg, "s", 10, []byte(`{"state":1}`)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	cp := filepath.Join(dir, "s", "checkpoint")
	good, _ := os.ReadFile(cp)
	seg := segPath(dir, "s", 1)
	segBytes, _ := os.ReadFile(seg)
	offs := frameOffsets(t, seg)

	cases := []struct {
		name  string
		setup func()
	}{
		{"intact", func() {}},
		{"flipped payload byte", func() {
			b := slices.Clone(good)
			b[len(b)-2] ^= 1
			os.WriteFile(cp, b, 0o600)
		}},
		{"truncated", func() { os.WriteFile(cp, good[:len(good)-3], 0o600) }},
		// What a kill in the middle of a checkpoint written over another
		// can leave: one checkpoint's header, another's payload.
		{"old and new bytes mixed", func() {
			b := append(slices.Clone(good[:len(good)-len(`{"state":1}`)]), `{"state":2}`...)
			os.WriteFile(cp, b, 0o600)
		}},
		// What a crash can leave of a checkpoint whose bytes did not reach
		// the disk (checkpoints are not flushed).
		{"empty", func() { os.WriteFile(cp, nil, 0o600) }},
		{"zeroed", func() { os.WriteFile(cp, make([]byte, len(good)), 0o600) }},
		{"journal lost its tail", func() { os.WriteFile(seg, segBytes[:offs[6]], 0o600) }},
		{"journal replaced by smaller records", func() {
			var b []byte
			for i := uint64(1); i <= 10; i++ {
				b = appendFrame(b, &Record{Sequence: i, Kind: "k"})
			}
			os.WriteFile(seg, b, 0o600)
		}},
		{"segment renamed", func() {
			os.Remove(seg)
			var b []byte
			b = appendFrame(b, &Record{Sequence: 1, Kind: "k"})
			os.WriteFile(seg, b, 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(cp, good, 0o600)
			os.WriteFile(seg, segBytes, 0o600)
			c.setup()
			fs := openT(t, dir, nil)
			through, payload, err := fs.ReadCheckpoint(bg, "s")
			if c.name == "intact" {
				if err != nil || through != 10 || string(payload) != `{"state":1}` {
					t.Fatalf("ReadCheckpoint = %d, %q, %v", through, payload, err)
				}
				return
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("ReadCheckpoint = %d, %v; want ErrNotFound", through, err)
			}
		})
	}
}

func TestCheckpointAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{SegmentBytes: 300}
	fs := openT(t, dir, opts)
	for i := 1; i <= 30; i++ {
		if err := fs.Append(bg, "s", uint64(i), numbered(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, through := range []uint64{0, 1, 7, 13, 29, 30} {
		if err := fs.WriteCheckpoint(bg, "s", through, []byte{byte(through)}); err != nil {
			t.Fatalf("WriteCheckpoint(%d) = %v", through, err)
		}
		fs.Close()
		fs = openT(t, dir, opts)
		got, p, err := fs.ReadCheckpoint(bg, "s")
		if err != nil || got != through || p[0] != byte(through) {
			t.Fatalf("ReadCheckpoint after reopen = %d, %v, %v; want %d", got, p, err, through)
		}
		if n, err := fs.Next(bg, "s"); err != nil || n != 31 {
			t.Fatalf("Next after reopen = %d, %v; want 31", n, err)
		}
	}
}

func TestLimits(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, &Options{MaxRecordBytes: 1000, MaxQueueBytes: 600, MaxSessionQueueBytes: 300})
	big := Record{Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", 1000) + `"`)}
	if err := fs.Append(bg, "s", 1, []Record{big}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append(too large) = %v, want ErrTooLarge", err)
	}
	// Many sessions appending at once overflow the 600-byte total queue.
	rec := Record{Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", 200) + `"`)}
	var overloaded error
	for attempt := 0; attempt < 20 && overloaded == nil; attempt++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 32 {
			wg.Go(func() {
				id := fmt.Sprintf("q%d-%d", attempt, i)
				err := fs.Append(bg, id, 1, []Record{rec})
				if err != nil {
					mu.Lock()
					overloaded = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if !errors.Is(overloaded, ErrOverloaded) || !strings.Contains(overloaded.Error(), "MaxQueueBytes") {
		t.Fatalf("concurrent appends over the queue bound = %v, want ErrOverloaded naming MaxQueueBytes", overloaded)
	}
}

func TestOpenFileBound(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, &Options{MaxOpenFiles: 3})
	for round := 1; round <= 3; round++ {
		for i := range 10 {
			if err := fs.Append(bg, fmt.Sprint("s", i), uint64(round), numbered(round, 1)); err != nil {
				t.Fatal(err)
			}
			if n := fs.openFiles.Load(); n > 3 {
				t.Fatalf("%d segment handles open, bound is 3", n)
			}
		}
	}
	for i := range 10 {
		if rs, _ := fs.Read(bg, fmt.Sprint("s", i), 0, 0, 0); len(rs) != 3 {
			t.Fatalf("session %d holds %d records, want 3", i, len(rs))
		}
	}
}

// TestReadChecksDamage: a committed frame that no longer checks out when
// read back is reported as damage (once a sync point retired the commit
// log: before that the log repairs it, see TestLoggedDamageIsRepaired).
func TestReadChecksDamage(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, &Options{SyncPointInterval: time.Nanosecond})
	if err := fs.Append(bg, "s", 1, numbered(1, 50)); err != nil {
		t.Fatal(err)
	}
	waitRetired(t, fs, dir)
	path := segPath(dir, "s", 1)
	offs := frameOffsets(t, path)
	b, _ := os.ReadFile(path)
	b[offs[30]+frameHeaderSize+3] ^= 0x10
	os.WriteFile(path, b, 0o600)
	// Pages before the damaged frame still read; the one holding it fails.
	if rs, err := fs.Read(bg, "s", 0, 30, 0); err != nil || len(rs) != 30 {
		t.Fatalf("Read before the damage = %d records, %v", len(rs), err)
	}
	_, err := fs.Read(bg, "s", 30, 0, 0)
	var de *DamagedError
	if !errors.As(err, &de) || de.Offset != offs[30] || de.File != path {
		t.Fatalf("Read of a damaged frame = %v, want a *DamagedError at %d", err, offs[30])
	}
}

// waitRetired waits for the sync point that follows every commit under
// a zero SyncPointInterval to retire the commit log.
func waitRetired(t *testing.T, fs *FileStore, dir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(logFiles(t, dir)) > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the commit log was not retired")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPagingMatchesOneRead pages through a multi-segment session with
// several page sizes and compares with reading everything at once.
func TestPagingMatchesOneRead(t *testing.T) {
	fs := openT(t, t.TempDir(), &Options{SegmentBytes: 1500})
	for i := 1; i <= 300; i += 30 {
		if err := fs.Append(bg, "s", uint64(i), numbered(i, 30)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := fs.Read(bg, "s", 0, 1000, 1<<20)
	if err != nil || len(all) != 300 {
		t.Fatalf("Read all = %d, %v", len(all), err)
	}
	for _, size := range []int{1, 7, 64} {
		var got []Record
		for after := uint64(0); ; {
			page, err := fs.Read(bg, "s", after, size, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Sequence
		}
		if len(got) != len(all) {
			t.Fatalf("pages of %d: %d records", size, len(got))
		}
		for i := range got {
			if got[i].Sequence != all[i].Sequence || string(got[i].Data) != string(all[i].Data) || got[i].Kind != all[i].Kind {
				t.Fatalf("pages of %d: record %d = %+v, want %+v", size, i, got[i], all[i])
			}
		}
		// Paging backwards is served from the index, not the last hint.
		if page, _ := fs.Read(bg, "s", 10, 1, 0); len(page) != 1 || page[0].Sequence != 11 {
			t.Fatalf("Read after 10 = %+v", page)
		}
	}
}

// TestDamageInCheckpointPrefixRefusesSession flips a byte inside the prefix
// a checkpoint vouches for: the open does not read it, but the session is
// refused as a whole before anything is appended after it, and from the
// first Read in it, with the file and offset named.
func TestDamageInCheckpointPrefixRefusesSession(t *testing.T) {
	for _, first := range []string{"append", "read", "verify"} {
		t.Run(first, func(t *testing.T) {
			dir := t.TempDir()
			fill(t, dir, "s", 50, nil)
			fs := openT(t, dir, nil)
			if err := fs.WriteCheckpoint(bg, "s", 40, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			fs.Close()
			path := segPath(dir, "s", 1)
			offs := frameOffsets(t, path)
			b, _ := os.ReadFile(path)
			b[offs[10]+frameHeaderSize+3] ^= 0x10
			os.WriteFile(path, b, 0o600)

			fs = openT(t, dir, nil)
			if n, err := fs.Next(bg, "s"); err != nil || n != 51 {
				t.Fatalf("Next = %d, %v; the open should trust the checkpoint", n, err)
			}
			var err error
			switch first {
			case "append":
				err = fs.Append(bg, "s", 51, numbered(51, 1))
			case "read":
				_, err = fs.Read(bg, "s", 5, 0, 0)
			case "verify":
				err = fs.Verify(bg, "s")
			}
			var de *DamagedError
			if !errors.As(err, &de) || de.File != path || de.Offset != offs[10] {
				t.Fatalf("%s = %v, want a *DamagedError at %s offset %d", first, err, path, offs[10])
			}
			wantDamaged(t, fs, "s", path, offs[10], "checksum")
			if err := fs.Append(bg, "s", 51, numbered(51, 1)); !errors.As(err, &de) {
				t.Fatalf("Append after the damage = %v, want a *DamagedError", err)
			}
			if _, err := fs.Read(bg, "s", 45, 0, 0); !errors.As(err, &de) {
				t.Fatalf("Read after the damage = %v, want a *DamagedError", err)
			}
			fs.Close()
			if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
				t.Fatal("the damaged segment was rewritten")
			}
			// Reopened, the session is still refused, without the checkpoint's help.
			fs = openT(t, dir, nil)
			if err := fs.Append(bg, "s", 51, numbered(51, 1)); !errors.As(err, &de) || de.Offset != offs[10] {
				t.Fatalf("Append after reopening = %v", err)
			}
		})
	}
}
