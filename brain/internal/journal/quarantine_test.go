//go:build unix

package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// crashChildOnce runs the crash test's child on dir in mode, SIGKILLs it
// after killAfter acknowledgements and answers the last acknowledged
// sequence of each session.
func crashChildOnce(t *testing.T, dir, mode string, killAfter int) map[string]uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashModeEnv+"="+mode)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := make(map[string]uint64)
	lines := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		id, seq, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(seq, 10, 64)
		if !ok || err != nil {
			t.Fatalf("bad child line %q", sc.Text())
		}
		acked[id] = max(acked[id], n)
		if lines++; lines == killAfter {
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	cmd.Wait()
	if lines < killAfter {
		t.Fatalf("child exited after %d acks: %s", lines, stderr.String())
	}
	return acked
}

// checkCrashSession reads every record of the crash child's session id
// and checks that it holds at least the acknowledged ones, dense and
// intact.
func checkCrashSession(t *testing.T, fs *FileStore, id string, acked uint64) {
	t.Helper()
	recs, err := fs.Read(bg, id, 0, 0, 0)
	if err != nil {
		t.Fatalf("Read(%s) = %v", id, err)
	}
	if uint64(len(recs)) < acked {
		t.Fatalf("%s holds %d records, %d were acknowledged", id, len(recs), acked)
	}
	for i, r := range recs {
		var d crashData
		if r.Sequence != uint64(i+1) || json.Unmarshal(r.Data, &d) != nil || d.N != r.Sequence || d.S != id {
			t.Fatalf("%s record %d = seq %d data %s", id, i+1, r.Sequence, r.Data)
		}
	}
}

// A process killed with records in its commit log only, one of whose
// session directories is then replaced by a symbolic link: the store
// opens, every other session holds every acknowledged record, the linked
// session is damaged, naming where its records are kept, and nothing is
// written through the link. The log files are retired all the same, and
// once the directory is moved back into its place the next open brings
// every acknowledged record of it back.
func TestReplayQuarantinesLinkedSessionAfterKill(t *testing.T) {
	dir := t.TempDir()
	acked := crashChildOnce(t, dir, "log-only", 60)
	if acked["c0"] == 0 {
		t.Fatalf("nothing of c0 acknowledged: %v", acked)
	}
	link := filepath.Join(dir, "c0")
	moved := filepath.Join(t.TempDir(), "c0")
	if err := os.Rename(link, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	inMoved := segmentRecords(t, moved)
	if inMoved >= int(acked["c0"]) {
		t.Fatalf("the segments of c0 hold %d records, %d acknowledged: the log holds nothing more", inMoved, acked["c0"])
	}

	fs, err := OpenFileStore(dir, crashOpts)
	if err != nil {
		t.Fatalf("OpenFileStore with one linked session directory = %v; want the store open", err)
	}
	for w := 1; w < crashSessions; w++ {
		id := fmt.Sprint("c", w)
		checkCrashSession(t, fs, id, acked[id])
	}
	_, err = fs.Read(bg, "c0", 0, 0, 0)
	var de *DamagedError
	if !errors.As(err, &de) || de.File != link || !strings.Contains(de.Reason, filepath.Join(dir, ".quarantine", "c0")) {
		t.Fatalf("Read(c0) = %v; want a DamagedError naming the link and %s", err, filepath.Join(dir, ".quarantine", "c0"))
	}
	if err := fs.Append(bg, "c0", acked["c0"]+1, numbered(1, 1)); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Append(c0) = %v; want ErrDamaged", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if n := segmentRecords(t, moved); n != inMoved {
		t.Fatalf("the directory the link names went from %d to %d records", inMoved, n)
	}
	if logs := logFiles(t, dir); len(logs) != 0 {
		t.Fatalf("log files %v left after the open", logs)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, ".quarantine", "c0", "*.log"))
	if len(kept) == 0 {
		t.Fatalf("no quarantine file of c0")
	}

	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, link); err != nil {
		t.Fatal(err)
	}
	verifyAfterCrash(t, dir, 0, acked)
	if _, err := os.Stat(filepath.Join(dir, ".quarantine", "c0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("quarantine of c0 after its records were written back: %v; want it gone", err)
	}
}

// Deleting a session whose records are kept in quarantine discards them
// with the link: the id then starts a new session, which the next open
// leaves as it is.
func TestDeleteDiscardsQuarantine(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"s"}, 4, func([]byte) []byte { return nil })
	link := filepath.Join(dir, "s")
	if err := os.Rename(link, filepath.Join(t.TempDir(), "s")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), link); err != nil {
		t.Fatal(err)
	}
	fs := openT(t, dir, noSyncPoints)
	if _, err := fs.Next(bg, "s"); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Next(s) = %v; want ErrDamaged", err)
	}
	if err := fs.Delete(bg, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".quarantine", "s")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("quarantine after Delete: %v; want it gone", err)
	}
	if err := fs.Append(bg, "s", 1, numbered(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "s", 2)
}

// Records kept in quarantine that do not fit the directory put back in
// the session's place (here an empty one, while the records kept follow
// others the log no longer holds) leave that session damaged with its
// records still kept; the store and every other session open.
func TestQuarantineThatDoesNotFitStaysKept(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, "s", 3, noSyncPoints) // durable in the segments, the log retired
	fs, err := OpenFileStore(dir, noSyncPoints)
	if err != nil {
		t.Fatal(err)
	}
	fs.segWriteHook = func([]byte) []byte { return nil }
	for _, id := range []string{"s", "plain"} {
		next, err := fs.Next(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Append(bg, id, next, numbered(int(next), 2)); err != nil {
			t.Fatal(err)
		}
	}
	fs.closeNoSync()
	link := filepath.Join(dir, "s")
	moved := filepath.Join(t.TempDir(), "s")
	if err := os.Rename(link, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "plain", 2)
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(link, 0o700); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "plain", 2)
	_, err = fs.Read(bg, "s", 0, 0, 0)
	var de *DamagedError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, filepath.Join(dir, ".quarantine", "s")) {
		t.Fatalf("Read(s) = %v; want a DamagedError naming where its records are kept", err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}

	// The right directory back in its place: every record is there.
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, link); err != nil {
		t.Fatal(err)
	}
	fs = openT(t, dir, noSyncPoints)
	readAll(t, fs, "s", 5)
}
