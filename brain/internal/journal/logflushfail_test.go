//go:build linux

package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestFailedLogFlushThenCrash: an append whose commit log flush failed (the
// device under the file system is out of space) is answered with ErrWrite;
// when the process then stops before anything else is written, the next
// open finds nothing of that append, though the log file's pages were
// still cached: the round's entries are cut from the log when its flush
// fails, as its segment writes are.
func TestFailedLogFlushThenCrash(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop mounts need root")
	}
	for _, mode := range []FlushMode{FlushPlain, FlushRing} {
		t.Run(mode.String(), func(t *testing.T) {
			mnt, fill, _ := mountLoopExt4(t, "errors=continue,nodioread_nolock")
			sdir := filepath.Join(mnt, "sessions")
			opts := &Options{CommitLogBytes: 4 << 20, SyncPointInterval: 1 << 40, Flush: mode}
			fs := openT(t, sdir, opts)
			if err := fs.Append(bg, "s", 1, numbered(1, 1)); err != nil {
				t.Fatal(err)
			}
			filler := fill()
			big := []Record{{Kind: "k", Data: json.RawMessage(`"` + string(bytes.Repeat([]byte("b"), 600<<10)) + `"`)}}
			// Rounds before the log file's blocks run out on the device
			// may succeed; the log holds less than CommitLogBytes, so no
			// sync point is taken.
			next := uint64(2)
			var err error
			for ; next < 6; next++ {
				if err = fs.Append(bg, "s", next, big); err != nil {
					break
				}
			}
			if err == nil {
				t.Skip("the full device failed no log flush here")
			}
			if !errors.Is(err, ErrWrite) {
				t.Fatalf("Append on a full device = %v, want ErrWrite", err)
			}
			if got, err := fs.Next(bg, "s"); err != nil || got != next {
				t.Fatalf("Next after the failed append = %d, %v; want %d", got, err, next)
			}
			fs.closeNoSync()
			filler.Free(t)

			fs = openT(t, sdir, opts)
			got, err := fs.Next(bg, "s")
			if err != nil {
				t.Fatal(err)
			}
			if got != next {
				t.Fatalf("Next after a restart = %d, want %d: the append answered ErrWrite came back", got, next)
			}
			if err := fs.Append(bg, "s", next, numbered(int(next), 1)); err != nil {
				t.Fatalf("Append after the restart = %v", err)
			}
		})
	}
}
