//go:build linux

package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// mountLoopExt4 makes an ext4 file system whose blocks live in a sparse
// image on a small tmpfs, mounted through a loop device: once the tmpfs
// is full, writeback to blocks the image never held fails, so an
// fdatasync of a segment answers an error while the page cache took the
// write. Skipped where tmpfs or loop mounts are not available.
func mountLoopExt4(t *testing.T, opts string) (mnt string, filler func() *fullfs.Filler, remount func()) {
	t.Helper()
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	back := fullfs.Mount(t, 40<<20)
	img := filepath.Join(back, "img")
	run := func(name string, args ...string) (string, error) {
		out, err := exec.Command(name, args...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("truncate", "-s", "64M", img); err != nil {
		t.Skipf("truncate: %v %s", err, out)
	}
	if out, err := run("mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-E", "lazy_itable_init=0", img); err != nil {
		t.Skipf("mkfs.ext4: %v %s", err, out)
	}
	dev, err := run("losetup", "-f", "--show", img)
	if err != nil {
		t.Skipf("no loop device: %v %s", err, dev)
	}
	mnt = t.TempDir()
	mount := func() {
		if out, err := run("mount", "-o", opts, dev, mnt); err != nil {
			t.Skipf("mount %s: %v %s", dev, err, out)
		}
	}
	mount()
	t.Cleanup(func() {
		run("umount", mnt)
		run("losetup", "-d", dev)
	})
	remount = func() {
		// Unmounting drops the file system's page cache: what is read
		// after is what reached the device.
		if out, err := run("umount", mnt); err != nil {
			t.Fatalf("umount: %v %s", err, out)
		}
		mount()
	}
	return mnt, func() *fullfs.Filler { return fullfs.Fill(t, back) }, remount
}

// TestFailedSegmentSyncDoesNotStick: a sync point whose flush of the
// segments fails (the device under them is out of space) fails the appends
// of that round without acknowledging them; once space is back the next
// append succeeds, and the records acknowledged before the failure reached
// the device (the segments were written again from the commit log: the
// failed flush may have dropped their dirty pages), so they read back
// after the page cache is gone and the log retired.
//
// The file system is mounted with nodioread_nolock: with ext4's default
// dioread_nolock a failed writeback can leave blocks marked unwritten,
// which no later write and flush from user space repairs while it stays
// mounted (the flush reports success, the device reads zeros). The store
// reads rewritten frames back past the page cache (O_DIRECT) before it
// retires a log, so there it keeps the log for the next open instead.
func TestFailedSegmentSyncDoesNotStick(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop mounts need root")
	}
	// With the commit log flushed by fdatasync(2) and through io_uring:
	// a failed flush of the log reports its error either way.
	for _, mode := range []FlushMode{FlushPlain, FlushRing} {
		t.Run(mode.String(), func(t *testing.T) {
			failSegmentSync(t, "errors=continue,nodioread_nolock", false, mode)
		})
	}
}

// dropSegmentPages drops the clean pages of every segment under dir from
// the page cache, as reclaim may.
func dropSegmentPages(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(path, ".segment") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatalf("fadvise %s: %v", path, err)
		}
		return nil
	})
}

// failSegmentSync runs the scenario of TestFailedSegmentSyncDoesNotStick;
// with evict, the segments' pages are dropped after every failed append;
// flush selects how the writer flushes the commit log.
func failSegmentSync(t *testing.T, mountOpts string, evict bool, flush FlushMode) {
	mnt, fill, remount := mountLoopExt4(t, mountOpts)
	sdir := filepath.Join(mnt, "sessions")
	opts := &Options{CommitLogBytes: 1 << 20, SyncPointInterval: 1 << 40, Flush: flush}
	fs := openT(t, sdir, opts)
	payload := func(c byte) json.RawMessage {
		return json.RawMessage(`"` + string(bytes.Repeat([]byte{c}, 600<<10)) + `"`)
	}
	acked := map[uint64]string{}
	appendOne := func(c byte) error {
		next, err := fs.Next(bg, "s")
		if err != nil {
			t.Fatal(err)
		}
		err = fs.Append(bg, "s", next, []Record{{Kind: "k", Data: payload(c)}})
		if err == nil {
			acked[next] = string(payload(c))
		} else if !errors.Is(err, ErrWrite) {
			t.Fatalf("append = %v, want success or ErrWrite", err)
		} else {
			if evict {
				dropSegmentPages(t, mnt)
			}
			// Nothing of a failed append is found afterwards.
			if again, err := fs.Next(bg, "s"); err != nil || again != next {
				t.Fatalf("Next after a failed append at %d = %d, %v; want %d", next, again, err, next)
			}
		}
		return err
	}
	// Acknowledged, durable through the commit log only (no sync point
	// yet: the log holds less than CommitLogBytes).
	if err := appendOne('a'); err != nil {
		t.Fatal(err)
	}
	filler := fill()
	// These rounds reach CommitLogBytes: their log fdatasync or the sync
	// point after them fails on the full device.
	failures := 0
	for i := 0; i < 4; i++ {
		if appendOne('b') != nil {
			failures++
		}
	}
	if failures == 0 {
		t.Skip("the full device failed no flush here (writeback took the pages before the sync point)")
	}
	filler.Free(t)
	if err := appendOne('c'); err != nil {
		t.Fatalf("append once space is back = %v, want success", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if n := len(logFiles(t, sdir)); n != 0 {
		t.Fatalf("%d commit log files left after Close, want the log retired", n)
	}
	remount()
	fs = openT(t, sdir, opts)
	recs, err := fs.Read(bg, "s", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	for _, r := range recs {
		got[r.Sequence] = string(r.Data)
	}
	for seq, data := range acked {
		if got[seq] != data {
			t.Fatalf("acknowledged record %d lost after remount (%d records read)", seq, len(recs))
		}
	}
}

// TestFailedSegmentSyncSurvivesEvictedPages is TestFailedSegmentSyncDoesNotStick
// under memory pressure: a page whose writeback failed is clean, so the
// kernel may drop it, and a read then answers what the device holds (here
// zeros), not the acknowledged frames. After every failed append the
// segments' pages are dropped; the session must still load and read back
// whole, repaired from the commit log, which holds every frame since the
// last sync point. (Only segment pages are dropped: on this loop device
// over a full tmpfs, an fdatasync of the log can answer success for blocks
// the device did not keep, and only the page cache then holds them.)
func TestFailedSegmentSyncSurvivesEvictedPages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loop mounts need root")
	}
	failSegmentSync(t, "errors=continue,nodioread_nolock", true, FlushAuto)
}
