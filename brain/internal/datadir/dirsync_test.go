package datadir

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var (
	tracedMkdir = regexp.MustCompile(`mkdirat\(AT_FDCWD(?:<[^>]*>)?, "((?:[^"\\]|\\.)*)", [0-7]+\) = 0$`)
	tracedFsync = regexp.MustCompile(`fsync\([0-9]+<((?:[^>\\]|\\.)*)>\) = 0$`)
)

// tracedOpen runs Open(dir) in a child process under strace and answers,
// in order, the directories it created, and the trace lines at which
// each directory was created ("mkdir <path>") or fsynced ("fsync <path>").
// The test is skipped where strace is missing or cannot trace.
func tracedOpen(t *testing.T, dir string) (created []string, order map[string][]int) {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("skipping: strace is not installed")
	}
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=mkdir,mkdirat,fsync", "-o", out, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(b), "PTRACE") || strings.Contains(string(b), "ptrace") {
			t.Skipf("skipping: strace cannot trace here: %s", b)
		}
		t.Fatalf("Open under strace: %v: %s", err, b)
	}
	trace, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	order = make(map[string][]int)
	for i, line := range strings.Split(string(trace), "\n") {
		if m := tracedMkdir.FindStringSubmatch(line); m != nil {
			p := unquote(t, m[1])
			created = append(created, p)
			order["mkdir "+p] = append(order["mkdir "+p], i)
		}
		if m := tracedFsync.FindStringSubmatch(line); m != nil {
			p := unquote(t, m[1])
			order["fsync "+p] = append(order["fsync "+p], i)
		}
	}
	return created, order
}

func unquote(t *testing.T, s string) string {
	t.Helper()
	u, err := strconv.Unquote(`"` + s + `"`)
	if err != nil {
		t.Fatalf("trace path %q: %v", s, err)
	}
	return u
}

// wantParentsSynced checks that every directory created was followed by
// an fsync of its parent, so that a crash after Open returned cannot lose
// its entry while the files later written inside it were made durable.
func wantParentsSynced(t *testing.T, created []string, order map[string][]int) {
	t.Helper()
	for _, dir := range created {
		made := order["mkdir "+dir][0]
		syncs := order["fsync "+filepath.Dir(dir)]
		if !slices.ContainsFunc(syncs, func(i int) bool { return i > made }) {
			t.Errorf("Open created %s and never fsynced %s after it", dir, filepath.Dir(dir))
		}
	}
}

// Open of a data directory whose parents do not exist yet creates them,
// the directory and sessions/, and makes each new entry durable: the
// parent of every directory it created is fsynced after the creation.
func TestOpenSyncsParentsOfCreatedDirectories(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", "data")
	created, order := tracedOpen(t, dir)
	want := []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), dir, filepath.Join(dir, SessionsName)}
	if !slices.Equal(created, want) {
		t.Fatalf("directories created = %v; want %v", created, want)
	}
	wantParentsSynced(t, created, order)
	if fi, err := os.Stat(filepath.Join(dir, SessionsName)); err != nil || !fi.IsDir() {
		t.Fatalf("sessions/ after Open: %v", err)
	}
}

// Open of an initialised data directory whose sessions/ is missing makes
// it again and makes its entry durable.
func TestOpenSyncsRecreatedSessionsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if err := os.Remove(filepath.Join(dir, SessionsName)); err != nil {
		t.Fatal(err)
	}
	created, order := tracedOpen(t, dir)
	if want := []string{filepath.Join(dir, SessionsName)}; !slices.Equal(created, want) {
		t.Fatalf("directories created = %v; want %v", created, want)
	}
	wantParentsSynced(t, created, order)
}
