package secrets

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const childDirEnv = "BRAIN_SECRETS_TEST_SEAL_IN"

var (
	// A call another thread interrupts is traced "<unfinished ...>" and
	// its result on a later line; the child fails if it failed.
	tracedMkdir = regexp.MustCompile(`mkdirat\(AT_FDCWD(?:<[^>]*>)?, "((?:[^"\\]|\\.)*)", [0-7]+(?:\) = 0| <unfinished \.\.\.>)$`)
	tracedFsync = regexp.MustCompile(`fsync\([0-9]+<((?:[^>\\]|\\.)*)>(?:\) = 0| <unfinished \.\.\.>)$`)
	tracedWrite = regexp.MustCompile(`^[0-9]+ +write\([0-9]+<((?:[^>\\]|\\.)*)>`)
)

// TestSealInChild is the child process of
// TestRecreatedSessionsDirectoryIsDurable: it opens the store in the
// directory the environment names and seals one secret.
func TestSealInChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("run as a child process only")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "ses_a", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}

// TestRecreatedSessionsDirectoryIsDurable: when sessions/ is missing
// beside an existing key, Open creates it again and fsyncs the directory
// that holds it before anything is sealed in it; otherwise a crash could
// lose the directory, and with it a sealed file whose session's journal
// is durable.
func TestRecreatedSessionsDirectoryIsDurable(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("skipping: strace is not installed")
	}
	dir := filepath.Join(t.TempDir(), "server-metadata")
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.Remove(sessions); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=mkdir,mkdirat,fsync,write", "-o", out, os.Args[0], "-test.run=^TestSealInChild$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(strings.ToLower(string(b)), "ptrace") {
			t.Skipf("skipping: strace cannot trace here: %s", b)
		}
		t.Fatalf("Open and Put under strace: %v: %s", err, b)
	}
	trace, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	mkdir, synced, sealed := -1, -1, -1
	for i, line := range strings.Split(string(trace), "\n") {
		if m := tracedMkdir.FindStringSubmatch(line); m != nil && unquote(t, m[1]) == sessions && mkdir < 0 {
			mkdir = i
		}
		if m := tracedFsync.FindStringSubmatch(line); m != nil && unquote(t, m[1]) == dir && mkdir >= 0 && synced < 0 {
			synced = i
		}
		if m := tracedWrite.FindStringSubmatch(line); m != nil && strings.HasPrefix(unquote(t, m[1]), sessions+string(filepath.Separator)) && sealed < 0 {
			sealed = i
		}
	}
	if mkdir < 0 || sealed < 0 {
		t.Fatalf("the trace shows no mkdir of %s (line %d) or no write of a sealed file (line %d):\n%s", sessions, mkdir, sealed, trace)
	}
	if synced < 0 || synced > sealed {
		t.Fatalf("%s was created again (trace line %d) and a secret sealed in it (line %d) with no fsync of %s between them (fsync at line %d)", sessions, mkdir, sealed, dir, synced)
	}
}

func unquote(t *testing.T, s string) string {
	t.Helper()
	u, err := strconv.Unquote(`"` + s + `"`)
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	return u
}
