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

// TestFullDiskAfterPreallocatedLog: the current log file reserved its
// space while the disk had room; then the disk fills. An append whose
// log entry fits in the reserved space but whose segment write fails
// answers ErrWrite, and nothing of it comes back: not once space is back
// in the same process, not after a close or a crash, not from a reopen on
// the still full disk (which opens), and not once space is back, when
// appends go on at the same sequence.
func TestFullDiskAfterPreallocatedLog(t *testing.T) {
	for _, stop := range []string{"free", "close", "crash"} {
		t.Run(stop, func(t *testing.T) {
			dir := fullfs.Mount(t, 24<<20)
			sdir := filepath.Join(dir, "sessions")
			fs, err := OpenFileStore(sdir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
				t.Fatal(err)
			}
			logs := logFiles(t, sdir)
			if len(logs) != 1 {
				t.Fatalf("log files %v, want one", logs)
			}
			if fi, err := os.Stat(logs[0]); err != nil || fi.Size() != maxLogPrealloc {
				t.Skipf("the log file was not preallocated (%v)", err)
			}
			filler := fullfs.Fill(t, dir)
			big := []Record{{Kind: "k", Data: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 256<<10)) + `"`)}}
			err = fs.Append(bg, "s", 4, big)
			if !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Append on a full disk = %v, want ErrWrite wrapping ENOSPC", err)
			}
			if next, err := fs.Next(bg, "s"); err != nil || next != 4 {
				t.Fatalf("Next after the failed append = %d, %v; want 4", next, err)
			}
			switch stop {
			case "free":
				filler.Free(t)
				readAll(t, fs, "s", 3)
				if err := fs.Append(bg, "s", 4, numbered(4, 1)); err != nil {
					t.Fatalf("Append after space came back = %v", err)
				}
				fs.Close()
				fs = openT(t, sdir, nil)
				readAll(t, fs, "s", 4)
				return
			case "close":
				fs.Close()
			case "crash":
				fs.closeNoSync()
			}

			fs, err = OpenFileStore(sdir, nil)
			if err != nil {
				t.Fatalf("OpenFileStore on a full disk = %v", err)
			}
			readAll(t, fs, "s", 3)
			fs.closeNoSync()

			filler.Free(t)
			fs = openT(t, sdir, nil)
			readAll(t, fs, "s", 3)
			if err := fs.Append(bg, "s", 4, numbered(4, 1)); err != nil {
				t.Fatalf("Append after space came back = %v", err)
			}
			fs.Close()
			fs = openT(t, sdir, nil)
			readAll(t, fs, "s", 4)
		})
	}
}
