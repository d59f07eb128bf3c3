package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// TestCheckpointWrittenInPlace: each checkpoint is written over the last
// one in the same file (same inode, no temporary file), and the file is
// cut to the new checkpoint's length when it is shorter, so that a long
// checkpoint followed by a short one reads back as the short one, before
// and after a reopen.
func TestCheckpointWrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 30)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s", checkpointName)
	var ino uint64
	payloads := []string{strings.Repeat("L", 5000), "short", strings.Repeat("M", 700), "", strings.Repeat("N", 9000)}
	for i, p := range payloads {
		through := uint64(5 + i)
		if err := fs.WriteCheckpoint(bg, "s", through, []byte(p)); err != nil {
			t.Fatal(err)
		}
		got, payload, err := fs.ReadCheckpoint(bg, "s")
		if err != nil || got != through || string(payload) != p {
			t.Fatalf("write %d: ReadCheckpoint = %d, %d bytes, %v; want %d, %d bytes", i, got, len(payload), err, through, len(p))
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// header: 36 bytes and one stamp of 16
		if want := int64(36 + 16 + len(p)); fi.Size() != want {
			t.Fatalf("write %d: checkpoint file has %d bytes, want %d", i, fi.Size(), want)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if i > 0 && st.Ino != ino {
			t.Fatalf("write %d: the checkpoint is a new file (inode %d, was %d)", i, st.Ino, ino)
		}
		ino = st.Ino
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a temporary checkpoint file exists: %v", err)
	}
	fs.Close()
	fs = openT(t, dir, nil)
	last := payloads[len(payloads)-1]
	if got, payload, err := fs.ReadCheckpoint(bg, "s"); err != nil || got != uint64(4+len(payloads)) || string(payload) != last {
		t.Fatalf("after reopen: ReadCheckpoint = %d, %d bytes, %v", got, len(payload), err)
	}
}

// TestCheckpointReadWaitsForWrite: a checkpoint read while another is
// written over it answers one checkpoint whole, never a mix of the two
// (which its checksum would refuse as not found).
func TestCheckpointReadWaitsForWrite(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 10)); err != nil {
		t.Fatal(err)
	}
	// Payloads of different lengths, each spanning many pages, so that a
	// read in the middle of a write would see both.
	payloads := [][]byte{bytes.Repeat([]byte("a"), 1<<20), bytes.Repeat([]byte("b"), 700<<10)}
	if err := fs.WriteCheckpoint(bg, "s", 9, payloads[0]); err != nil {
		t.Fatal(err)
	}
	const writes = 300
	var wg sync.WaitGroup
	var quit atomic.Bool
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		for i := 0; i < writes && !quit.Load(); i++ {
			if err := fs.WriteCheckpoint(bg, "s", uint64(9+i%2), payloads[i%2]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer wg.Wait()
	defer quit.Store(true)
	reads := 0
	for done := false; !done; reads++ {
		select {
		case <-stop:
			done = true
		default:
		}
		through, p, err := fs.ReadCheckpoint(bg, "s")
		if err != nil {
			t.Fatalf("read %d: ReadCheckpoint = %v", reads, err)
		}
		if want := payloads[(through-9)%2]; !bytes.Equal(p, want) {
			t.Fatalf("read %d: checkpoint through %d holds %d bytes of another", reads, through, len(p))
		}
	}
	if reads < 10 {
		t.Fatalf("only %d reads ran beside the writes", reads)
	}
}

// TestCheckpointOnFullDisk: a checkpoint that cannot be written whole for
// want of space answers the error, and the file it leaves is never taken
// for a checkpoint (the old one whole, or refused by its checksum); the
// session still opens and reads from its journal, and the next checkpoint
// once space is back is read again.
func TestCheckpointOnFullDisk(t *testing.T) {
	dir := fullfs.Mount(t, 4<<20)
	sdir := filepath.Join(dir, "sessions")
	fs := openT(t, sdir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 20)); err != nil {
		t.Fatal(err)
	}
	small := []byte(`"` + strings.Repeat("s", 1000) + `"`)
	if err := fs.WriteCheckpoint(bg, "s", 10, small); err != nil {
		t.Fatal(err)
	}
	filler := fullfs.Fill(t, dir)
	big := []byte(`"` + strings.Repeat("b", 256<<10) + `"`)
	if err := fs.WriteCheckpoint(bg, "s", 20, big); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteCheckpoint on a full disk = %v, want ENOSPC", err)
	}
	through, payload, err := fs.ReadCheckpoint(bg, "s")
	switch {
	case errors.Is(err, ErrNotFound):
	case err == nil && through == 10 && bytes.Equal(payload, small):
	default:
		t.Fatalf("ReadCheckpoint after a failed write = %d, %d bytes, %v; want the old checkpoint or ErrNotFound", through, len(payload), err)
	}
	// Space comes back; what the failed write left is still the file.
	filler.Free(t)
	fs.Close()
	fs = openT(t, sdir, nil)
	if rs, err := fs.Read(bg, "s", 0, 0, 0); err != nil || len(rs) != 20 {
		t.Fatalf("Read after a failed checkpoint = %d records, %v", len(rs), err)
	}
	if err := fs.WriteCheckpoint(bg, "s", 20, big); err != nil {
		t.Fatalf("WriteCheckpoint once space is back = %v", err)
	}
	fs.Close()
	fs = openT(t, sdir, nil)
	if through, payload, err := fs.ReadCheckpoint(bg, "s"); err != nil || through != 20 || !bytes.Equal(payload, big) {
		t.Fatalf("ReadCheckpoint once space is back = %d, %d bytes, %v", through, len(payload), err)
	}
}
