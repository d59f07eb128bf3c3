package docker

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// scriptShell is the shell the file-tool scripts run with here: the static
// busybox the Engine tests build their image from, so that the scripts'
// logic is checked with the tools an image may have, without a container.
func scriptShell(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(busyboxPath); err != nil {
		t.Skipf("no busybox to run the file-tool scripts with: %v", err)
	}
	return busyboxPath
}

// runScript runs a file-tool script as the provider runs it in a
// container, with its /workspace moved to dir (in the script and in args).
func runScript(t *testing.T, dir, script string, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runScriptAs(t, nil, dir, script, stdin, args...)
}

// runScriptAs is runScript as the user cred (nil: the test's own).
func runScriptAs(t *testing.T, cred *syscall.Credential, dir, script string, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	sh := scriptShell(t)
	script = strings.ReplaceAll(script, workspaceDir, dir)
	argv := []string{"sh", "-c", script, "brain-file"}
	for _, a := range args {
		argv = append(argv, strings.Replace(a, workspaceDir, dir, 1))
	}
	cmd := exec.Command(sh, argv...)
	cmd.Args = argv
	var o, e bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &o, &e
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run script: %v", err)
	}
	return o.String(), e.String(), code
}

// A read from an offset at or past the end of the file, up to the largest
// offset the input allows, prints nothing but the file's size (which
// runRead parses), as it does for an offset just past the end.
func TestReadScriptPastTheEnd(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, offset := range []int64{5, 6, 1 << 32, 1 << 40, math.MaxInt64 - 1, math.MaxInt64} {
		out, errOut, code := runScript(t, dir, readScript, nil, "/workspace/f", strconv.FormatInt(offset, 10), "100")
		if code != 0 || out != "" || strings.TrimSpace(errOut) != "5" {
			t.Errorf("read at %d: exit %d, stdout %q, stderr %q; want nothing and the size 5", offset, code, out, errOut)
		}
	}
	out, errOut, code := runScript(t, dir, readScript, nil, "/workspace/f", "1", "3")
	if code != 0 || out != "ell" || strings.TrimSpace(errOut) != "5" {
		t.Errorf("read at 1: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A write (and so an edit, which writes its result with the same script)
// that fails part-way because the disk is full leaves the file as it was,
// and no temporary file behind.
func TestWriteScriptOnFullDiskKeepsOldContent(t *testing.T) {
	dir := fullfs.Mount(t, 1<<20)
	old := bytes.Repeat([]byte("a"), 600<<10)
	if _, errOut, code := runScript(t, dir, writeScript, old, "/workspace/f", "0"); code != 0 {
		t.Fatalf("first write: exit %d: %s", code, errOut)
	}
	_, errOut, code := runScript(t, dir, writeScript, bytes.Repeat([]byte("b"), 1100<<10), "/workspace/f", "0")
	if code == 0 {
		t.Fatal("a write beyond the disk's space succeeded")
	}
	if !strings.Contains(errOut, "No space left") {
		t.Errorf("stderr %q does not say the disk is full", errOut)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("after the failed write f holds %d bytes, %v; want its old %d", len(got), err, len(old))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("entries after the failed write: %v", entries)
	}
}

// A replaced file keeps its permissions, a write through a link inside the
// workspace changes the file it leads to and keeps the link, and append
// adds to the end.
func TestWriteScriptKeepsModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "sub/run.sh")
	if err := os.WriteFile(target, []byte("echo 1\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/run.sh", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		path, appendFlag, data, want string
	}{
		{"/workspace/sub/run.sh", "0", "echo 2\n", "echo 2\n"},
		{"/workspace/link", "0", "echo 3\n", "echo 3\n"},
		{"/workspace/link", "1", "echo 4\n", "echo 3\necho 4\n"},
	} {
		if _, errOut, code := runScript(t, dir, writeScript, []byte(step.data), step.path, step.appendFlag); code != 0 {
			t.Fatalf("write %s: exit %d: %s", step.path, code, errOut)
		}
		fi, err := os.Lstat(target)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o750 {
			t.Errorf("write %s: mode %v, want -rwxr-x---", step.path, fi.Mode())
		}
		if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode().Type() != os.ModeSymlink {
			t.Errorf("write %s: the link is gone: %v %v", step.path, fi, err)
		}
		if got, _ := os.ReadFile(target); string(got) != step.want {
			t.Errorf("write %s: file holds %q, want %q", step.path, got, step.want)
		}
	}
	// A new file is created, in new directories.
	if _, errOut, code := runScript(t, dir, writeScript, []byte("new"), "/workspace/d/e/new", "0"); code != 0 {
		t.Fatalf("new file: exit %d: %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "d/e/new")); string(got) != "new" {
		t.Errorf("new file holds %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sub"))
	if len(entries) != 1 {
		t.Errorf("sub holds %v, want run.sh alone", entries)
	}
}

// A file the user may not write stays refused with the system's message,
// though the user could create the file replacing it in its directory.
func TestWriteScriptKeepsPermissions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the script as another user")
	}
	scriptShell(t)
	dir, err := os.MkdirTemp("", "brain-docker-script-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "root-owned")
	if err := os.WriteFile(f, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	user := &syscall.Credential{Uid: 1000, Gid: 1000}
	_, errOut, code := runScriptAs(t, user, dir, writeScript, []byte("new"), "/workspace/root-owned", "0")
	if code == 0 || !strings.Contains(errOut, "Permission denied") {
		t.Errorf("write of a file the user may not write: exit %d, stderr %q", code, errOut)
	}
	if got, _ := os.ReadFile(f); string(got) != "old" {
		t.Errorf("the file holds %q, want old", got)
	}
	if _, errOut, code := runScriptAs(t, user, dir, writeScript, []byte("mine"), "/workspace/new", "0"); code != 0 {
		t.Errorf("write of a new file: exit %d: %s", code, errOut)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("entries %v, want the two files", entries)
	}
}

// A list gives the size of every regular file, those whose names (or
// whose directories' names) begin with a dash included: stat must not
// take such a name for an option.
func TestListScriptSizesOfNamesWithDashes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"-n": "hello", "-c": "ab", "--": "xyz", "-d/f": "four", "-d/-e": "fives"}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runScript(t, dir, listScript, nil, workspaceDir, "1")
	if code != 0 {
		t.Fatalf("list: exit %d, stderr %q", code, errOut)
	}
	got := map[string]int64{}
	entries, _ := listEntries([]byte(out), ".", math.MaxInt)
	for _, e := range entries {
		got[e.Path] = e.Size
	}
	for name, content := range files {
		if size, ok := got[name]; !ok || size != int64(len(content)) {
			t.Errorf("list gives %s size %d (listed %v), want %d", name, size, ok, len(content))
		}
	}
}

// A loop of symbolic links is told from a missing file by realpath's
// message, not by the path, which may hold the same words.
func TestScriptsTellLoopsFromMissingFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "symbolic links"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{
		"/workspace/loop":                 exitLoop,
		"/workspace/loop/f":               exitLoop,
		"/workspace/symbolic links/x":     exitNotFound,
		"/workspace/symbolic link loop/x": exitNotFound,
	} {
		if _, errOut, code := runScript(t, dir, readScript, nil, p, "0", "10"); code != want {
			t.Errorf("read %q: exit %d (stderr %q), want %d", p, code, errOut, want)
		}
	}
}
