package journal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// unbornChildEnv names the store directory of unbornChild.
const unbornChildEnv = "BRAIN_JOURNAL_UNBORN_CHILD_DIR"

// unbornChild creates session "u" and SIGKILLs itself as soon as the
// writer has made its directory and first segment, before the record is
// written or logged: a create killed at that moment.
func unbornChild(dir string) {
	fs, err := OpenFileStore(dir, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fs.rollHook = func() {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill() // SIGKILL
		}
		select {}
	}
	if err := fs.Append(bg, "u", 1, numbered(1, 1)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(3)
}

// killCreate runs unbornChild on dir and checks that it was killed.
func killCreate(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), unbornChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, output %q; want it killed", err, out)
	}
}

// A create killed after it made the session's directory and before its
// first record was durable leaves a session that does not exist: the
// store's listing (and so the server's count of journals and of
// passivated sessions) leaves it out from the first listing on, which
// removes the directory, while the sessions that exist are listed. The
// session can then be created.
func TestCreateKilledIsNotListed(t *testing.T) {
	dir := t.TempDir()
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "r", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	killCreate(t, dir)
	if fi, err := os.Stat(filepath.Join(dir, "u", "journal", segmentName(1))); err != nil || fi.Size() != 0 {
		t.Fatalf("first segment of the killed create: %v, %v; want it made and empty", fi, err)
	}

	fs = openT(t, dir, nil)
	for range 2 {
		if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r"}) {
			t.Errorf("Sessions after a create killed before its record was durable = %v, %v; want [r]", ids, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "u")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory of the killed create after the listing: %v; want it removed", err)
	}
	if next, err := fs.Next(bg, "u"); err != nil || next != 1 {
		t.Errorf("Next(u) = %d, %v; want 1", next, err)
	}
	if err := fs.Append(bg, "u", 1, numbered(1, 2)); err != nil {
		t.Fatalf("create after the killed one: %v", err)
	}
	if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r", "u"}) {
		t.Errorf("Sessions after the create = %v, %v; want [r u]", ids, err)
	}
	if err := fs.Delete(bg, "r"); err != nil {
		t.Fatal(err)
	}
	if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"u"}) {
		t.Errorf("Sessions after deleting r = %v, %v; want [u]", ids, err)
	}
	wantNumbered(t, fs, "u", 2)
}

// wantNumbered checks that id holds exactly records 1..n of numbered(1, n).
func wantNumbered(t *testing.T, fs *FileStore, id string, n int) {
	t.Helper()
	recs, err := fs.Read(bg, id, 0, 0, 0)
	if err != nil || len(recs) != n {
		t.Fatalf("Read(%s) = %d records, %v; want %d", id, len(recs), err, n)
	}
	for i, r := range recs {
		if want := fmt.Sprintf(`{"n":%d}`, i+1); r.Sequence != uint64(i+1) || string(r.Data) != want {
			t.Errorf("record %d of %s = %d %s; want %d %s", i, id, r.Sequence, r.Data, i+1, want)
		}
	}
}

// A first record whose write was cut (its segment ends inside the frame:
// the tail of a write that never became durable, lost with the machine) is
// no record: the session is not listed, before or after its open; the
// open keeps the cut bytes beside the segment, and a create afterwards
// writes its record at the start of the segment, not after them.
func TestTornFirstRecordIsNotListed(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "r", 2, nil)
	fill(t, dir, "t", 1, nil)
	seg := segPath(dir, "t", 1)
	whole := mustRead(t, seg)
	for _, cut := range []int{len(whole) - 1, frameHeaderSize + 3, 5} {
		if err := os.WriteFile(seg, whole[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		fs := openT(t, dir, nil)
		if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r"}) {
			t.Errorf("cut at %d: Sessions = %v, %v; want [r]", cut, ids, err)
		}
		if next, err := fs.Next(bg, "t"); err != nil || next != 1 {
			t.Fatalf("cut at %d: Next(t) = %d, %v; want 1", cut, next, err)
		}
		if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r"}) {
			t.Errorf("cut at %d: Sessions after t's open = %v, %v; want [r]", cut, ids, err)
		}
		if b, err := os.ReadFile(seg + ".torn-0"); err != nil || string(b) != string(whole[:cut]) {
			t.Errorf("cut at %d: bytes kept = %q, %v; want the cut frame", cut, b, err)
		}
		if err := fs.Append(bg, "t", 1, numbered(1, 2)); err != nil {
			t.Fatalf("cut at %d: create after the cut: %v", cut, err)
		}
		if err := fs.Close(); err != nil {
			t.Fatal(err)
		}
		fs = openT(t, dir, nil)
		wantNumbered(t, fs, "t", 2)
		wantNumbered(t, fs, "r", 2)
		if ids, err := fs.Sessions(bg); err != nil || !slices.Equal(ids, []string{"r", "t"}) {
			t.Errorf("cut at %d: Sessions after the create = %v, %v; want [r t]", cut, ids, err)
		}
		fs.Close()
		// Back to the one-record journal for the next cut.
		for _, e := range []string{".torn-0", ".torn-0.1", ".torn-0.2"} {
			os.Remove(seg + e)
		}
		if err := os.WriteFile(seg, whole, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A journal that is damaged where its first record should be is listed,
// though it holds no readable record: its first segment is missing, or
// ends inside its first frame while another segment follows, or that
// frame's length field says more than the file holds while the frame is
// whole.
func TestDamagedFirstRecordIsListed(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{SegmentBytes: 64}
	for _, id := range []string{"missing", "short"} {
		fill(t, dir, id, 4, opts)
	}
	// One segment, one frame.
	fill(t, dir, "length", 1, nil)
	if err := os.Remove(segPath(dir, "missing", 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segPath(dir, "short", 1), 12); err != nil {
		t.Fatal(err)
	}
	b := mustRead(t, segPath(dir, "length", 1))
	b[1]++ // the length field's second byte: 256 bytes more
	if err := os.WriteFile(segPath(dir, "length", 1), b, 0o600); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, dir, opts)
	ids, err := fs.Sessions(bg)
	if err != nil || !slices.Equal(ids, []string{"length", "missing", "short"}) {
		t.Errorf("Sessions = %v, %v; want [length missing short]", ids, err)
	}
	for _, id := range ids {
		if _, err := fs.Next(bg, id); !errors.Is(err, ErrDamaged) {
			t.Errorf("Next(%s) = %v; want ErrDamaged", id, err)
		}
	}
}
