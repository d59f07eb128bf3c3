package braintest

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/envsdk/envtest"
)

// Serve builds the brain binary into dir and runs "brain serve" on a free
// loopback port over dir/data with the bearer token, without the built-in
// workspace environment, plus extra flags. It answers the server's URL;
// the server is stopped with SIGTERM when the test ends, and its stderr is
// logged when the test failed.
func Serve(t testing.TB, dir, token string, extra ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "brain")
	build := exec.Command("go", "build", "-o", bin, "github.com/brain-in-go/brain/brain/cmd/brain")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build brain: %v\n%s", err, out)
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--token", token, "--no-workspace"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, stderr := &Buffer{}, &Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
		if t.Failed() {
			t.Logf("brain serve stderr:\n%s", stderr.String())
		}
	})
	return WaitLine(t, stdout, "Brain is serving on ")
}

// WaitLine waits up to 30 seconds for a line starting with prefix in out
// and answers the rest of that line.
func WaitLine(t testing.TB, out *Buffer, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				return strings.TrimSpace(rest)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no line %q in output:\n%s", prefix, out.String())
	return ""
}

// Buffer is a bytes.Buffer safe for concurrent writers and readers (the
// one of envtest).
type Buffer = envtest.Buffer
