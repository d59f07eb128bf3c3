package journal

import (
	"errors"
	"os"
	"testing"
)

// zeroFrames overwrites the payloads of the frames of path at offs[i:j]
// with zeros in place, the way a page the kernel dropped after a failed
// writeback reads back.
func zeroFrames(t *testing.T, path string, offs []int64, i, j int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for k := i; k < j; k++ {
		end := offs[k+1]
		start := offs[k] + frameHeaderSize
		if _, err := f.WriteAt(make([]byte, end-start), start); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoggedDamageIsRepaired: frames a live commit log file still holds
// (no sync point since they were acknowledged) that no longer check out
// in their segment are written again from the log, by a Read of a loaded
// session and by the load of an unloaded one, and reach the device with
// the next sync point; damage before the last sync point stays damage.
func TestLoggedDamageIsRepaired(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{SyncPointInterval: 1 << 40, MaxOpenFiles: 1, MaxLoadedSessions: 1}
	fs := openT(t, dir, opts)
	if err := fs.Append(bg, "s", 1, numbered(1, 40)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil { // a sync point retires the log
		t.Fatal(err)
	}
	fs = openT(t, dir, opts)
	if err := fs.Append(bg, "s", 41, numbered(41, 40)); err != nil {
		t.Fatal(err)
	}
	path := segPath(dir, "s", 1)
	offs := append(frameOffsets(t, path), 0)
	fi, _ := os.Stat(path)
	offs[len(offs)-1] = fi.Size()
	want, err := fs.Read(bg, "s", 0, 0, 0)
	if err != nil || len(want) != 80 {
		t.Fatalf("Read = %d records, %v", len(want), err)
	}
	check := func(what string) {
		t.Helper()
		got, err := fs.Read(bg, "s", 50, 0, 0)
		if err != nil || len(got) != 30 {
			t.Fatalf("%s: Read after 50 = %d records, %v; want 30", what, len(got), err)
		}
		for i, r := range got {
			if string(r.Data) != string(want[50+i].Data) || r.Sequence != 51+uint64(i) {
				t.Fatalf("%s: record %d = %d %s, want %s", what, 51+i, r.Sequence, r.Data, want[50+i].Data)
			}
		}
	}

	// A loaded session: the Read that meets the damage repairs it.
	zeroFrames(t, path, offs, 55, 60)
	check("loaded session")

	// An unloaded session: its load repairs it.
	zeroFrames(t, path, offs, 70, 80)
	// Another session takes the one segment handle and the one load slot.
	if err := fs.Append(bg, "t", 1, numbered(1, 1)); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	loaded := fs.sessions["s"] != nil
	fs.mu.Unlock()
	if loaded {
		t.Fatal("session s still loaded")
	}
	if next, err := fs.Next(bg, "s"); err != nil || next != 81 {
		t.Fatalf("Next after a load over logged damage = %d, %v; want 81", next, err)
	}
	check("reloaded session")

	// A lost page that leaves the last frame looking torn (its length
	// runs past the end of the segment) is not cut as a crash's tail.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte{0, 0, 1, 0}, offs[79]) // 65,536 bytes
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(bg, "t", 2, numbered(2, 1)); err != nil {
		t.Fatal(err)
	}
	if next, err := fs.Next(bg, "s"); err != nil || next != 81 {
		t.Fatalf("Next after a load over a logged frame that looks torn = %d, %v; want 81", next, err)
	}
	check("reloaded over a torn-looking tail")

	// The repair is durable: reopened, with the log retired and no replay.
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(logFiles(t, dir)); n != 0 {
		t.Fatalf("%d log files after Close, want 0", n)
	}
	fs = openT(t, dir, opts)
	check("reopened")

	// Damage the log no longer covers is reported.
	zeroFrames(t, path, offs, 60, 61)
	_, err = fs.Read(bg, "s", 50, 0, 0)
	var de *DamagedError
	if !errors.As(err, &de) || de.Offset != offs[60] {
		t.Fatalf("Read over damage before the last sync point = %v, want a *DamagedError at %d", err, offs[60])
	}
}
