package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// TestFullDiskDoesNotStick fills the real file system under a store:
// appends fail with ErrWrite (ENOSPC) and Healthy reports it; a new
// session whose first append failed leaves no directory; once space is
// back Healthy recovers and appends go on where the durable records end.
//
// It runs with the commit log flushed by fdatasync(2) and through io_uring.
func TestFullDiskDoesNotStick(t *testing.T) {
	for _, mode := range []FlushMode{FlushPlain, FlushRing} {
		t.Run(mode.String(), func(t *testing.T) { fullDiskDoesNotStick(t, mode) })
	}
}

func fullDiskDoesNotStick(t *testing.T, mode FlushMode) {
	dir := fullfs.Mount(t, 4<<20)
	sdir := filepath.Join(dir, "sessions")
	fs := openT(t, sdir, &Options{Flush: mode})
	if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Healthy(); err != nil {
		t.Fatalf("Healthy = %v", err)
	}
	filler := fullfs.Fill(t, dir)
	big := []Record{{Kind: "k", Data: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 256<<10)) + `"`)}}
	err := fs.Append(bg, "s", 4, big)
	if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk = %v, want ErrWrite wrapping ENOSPC", err)
	}
	if err := fs.Healthy(); !errors.Is(err, ErrWrite) {
		t.Fatalf("Healthy on a full disk = %v, want ErrWrite", err)
	}
	// With a little room, the session's directory and segment can be
	// created but its first records cannot be written.
	filler.Leave(t, 16<<10)
	if err := fs.Append(bg, "new", 1, big); !errors.Is(err, ErrWrite) {
		t.Fatalf("first Append of a new session on a full disk = %v, want ErrWrite", err)
	}
	if _, err := os.Stat(filepath.Join(sdir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed first append left the session directory: %v", err)
	}
	if ids, _ := fs.Sessions(bg); len(ids) != 1 || ids[0] != "s" {
		t.Errorf("Sessions = %v, want [s]", ids)
	}

	filler.Free(t)
	if err := fs.Healthy(); err != nil {
		t.Fatalf("Healthy after space came back = %v", err)
	}
	next, err := fs.Next(bg, "s")
	if err != nil || next != 4 {
		t.Fatalf("Next after the failure = %d, %v; want 4", next, err)
	}
	if err := fs.Append(bg, "s", 4, big); err != nil {
		t.Fatalf("Append after space came back = %v", err)
	}
	if err := fs.Append(bg, "new", 1, numbered(1, 1)); err != nil {
		t.Fatalf("first Append of the new session after space came back = %v", err)
	}
	if mode == FlushRing && ringAvailable() && fs.Stats().RingFlushes == 0 {
		t.Error("no flush went through io_uring")
	}
	fs.Close()
	fs = openT(t, sdir, nil)
	rs, err := fs.Read(bg, "s", 0, 0, 0)
	if err != nil || len(rs) != 4 || len(rs[3].Data) != len(big[0].Data) {
		t.Fatalf("after reopen: %d records, %v", len(rs), err)
	}
}

// A store closed, or stopped by a crash, while the disk is full keeps its
// commit log files (the sync point cannot write its marker). It opens
// again on the still full disk: replay makes the segments durable, the log
// files stay live, and the acknowledged records read back. Once space is
// back a sync point retires the log files.
func TestReopenOnFullDisk(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "close", true: "crash"}[crash], func(t *testing.T) {
			dir := fullfs.Mount(t, 4<<20)
			sdir := filepath.Join(dir, "sessions")
			fs, err := OpenFileStore(sdir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
				t.Fatal(err)
			}
			filler := fullfs.Fill(t, dir)
			if crash {
				fs.closeNoSync()
			} else if err := fs.Close(); err == nil {
				t.Fatal("Close took a sync point on a full disk")
			}
			if len(logFiles(t, sdir)) == 0 {
				t.Fatal("no commit log file left")
			}

			fs, err = OpenFileStore(sdir, nil)
			if err != nil {
				t.Fatalf("OpenFileStore on a full disk = %v", err)
			}
			readAll(t, fs, "s", 3)
			filler.Free(t)
			if err := fs.Append(bg, "s", 4, numbered(4, 1)); err != nil {
				t.Fatalf("Append after space came back = %v", err)
			}
			if err := fs.Close(); err != nil {
				t.Fatalf("Close after space came back = %v", err)
			}
			if logs := logFiles(t, sdir); len(logs) != 0 {
				t.Errorf("log files %v left after a sync point with space", logs)
			}
			fs = openT(t, sdir, nil)
			readAll(t, fs, "s", 4)
		})
	}
}

// A user whose disk is full deletes sessions to get space back: Delete
// succeeds while the commit log files are live and the disk has no free
// block, the session is gone (also after a reopen), its space is freed,
// and the other sessions read back whole.
func TestDeleteOnFullDisk(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "close", true: "crash"}[crash], func(t *testing.T) {
			dir := fullfs.Mount(t, 4<<20)
			sdir := filepath.Join(dir, "sessions")
			fs, err := OpenFileStore(sdir, nil)
			if err != nil {
				t.Fatal(err)
			}
			big := []Record{{Kind: "k", Data: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 256<<10)) + `"`)}}
			if err := fs.Append(bg, "d", 1, big); err != nil {
				t.Fatal(err)
			}
			if err := fs.Append(bg, "keep", 1, numbered(1, 3)); err != nil {
				t.Fatal(err)
			}
			if len(logFiles(t, sdir)) == 0 {
				t.Fatal("no live commit log file")
			}
			filler := fullfs.Fill(t, dir)
			if err := fs.Delete(bg, "d"); err != nil {
				t.Fatalf("Delete on a full disk = %v", err)
			}
			if next, err := fs.Next(bg, "d"); err != nil || next != 1 {
				t.Fatalf("Next of the deleted session = %d, %v; want 1", next, err)
			}
			// The deleted session's blocks are free again.
			if err := os.WriteFile(filepath.Join(dir, "after"), make([]byte, 128<<10), 0o600); err != nil {
				t.Fatalf("writing into the space the delete freed: %v", err)
			}
			if crash {
				fs.closeNoSync()
			} else {
				fs.Close()
			}
			fs = openT(t, sdir, nil)
			if ids, _ := fs.Sessions(bg); len(ids) != 1 || ids[0] != "keep" {
				t.Fatalf("Sessions after reopen = %v, want [keep]", ids)
			}
			if next, err := fs.Next(bg, "d"); err != nil || next != 1 {
				t.Fatalf("Next of the deleted session after reopen = %d, %v; want 1", next, err)
			}
			readAll(t, fs, "keep", 3)
			filler.Free(t)
		})
	}
}
