package workspace

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// unprivilegedUID is the user a provider runs as in tests that need one
// without root's power to remove what it cannot write.
const unprivilegedUID = 65534

// startUnprivileged serves the provider on a fresh root as a user that is
// not root: in this process when the test does not run as root, else in a
// child process running as unprivilegedUID. It answers the provider's URL
// and root.
func startUnprivileged(t *testing.T) (url, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		f := newFixture(t, Options{})
		return f.url, f.root
	}
	// The child runs a copy of this test binary that the user may execute,
	// on a root the user owns.
	bin, err := os.MkdirTemp("", "workspace-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	exe := filepath.Join(bin, "provider.test")
	copyFile(t, os.Args[0], exe)
	root, err = os.MkdirTemp("", "workspace-root")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, dir := range []string{bin, root} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(root, unprivilegedUID, unprivilegedUID); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe, "-test.run=^TestProviderProcess$")
	child.Dir = root
	child.Env = append(os.Environ(), providerProcessEnv+"="+root)
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID}}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("cannot run a process as user %d: %v", unprivilegedUID, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait(); killMarked(t, root) })
	return listeningURL(t, out, nil), root
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// A command may leave directories it cannot write into (a Go module
// cache, a chmod -R a-w): reset, release and teardown still remove the
// workspace, and the provider need not be root to do so.
func TestReadOnlyDirectoriesAreRemoved(t *testing.T) {
	post, c, root := startUnprivilegedSession(t)
	lock := func() {
		t.Helper()
		var out toolset.CommandOutput
		ok(t, post(c.Execute(tool("command"), mustJSON(t, sh("mkdir -p ro/sub && echo x > ro/sub/f && chmod 0555 ro/sub ro && ! touch ro/g 2>/dev/null")), nil)), &out)
		if out.ExitCode != 0 {
			t.Fatalf("the command could write into a read-only directory; the test shows nothing: %+v", out)
		}
	}
	accepted(t, post(c.Setup(nil)))
	lock()
	ok(t, post(c.Call("reset", nil)), nil)
	fails(t, post(c.Execute(tool("read"), mustJSON(t, map[string]string{"path": "ro/sub/f"}), nil)), envapi.CodeNotFound)
	lock()
	accepted(t, post(c.Teardown()))
	if dirs := workspaceDirs(t, root); len(dirs) != 0 {
		t.Errorf("teardown left %v", dirs)
	}
}
