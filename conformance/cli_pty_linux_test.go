package conformance_test

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/brain-in-go/brain/conformance"
	"github.com/brain-in-go/brain/envsdk"
)

// openPty opens a pseudo-terminal pair: the master to read what was
// written, the slave to hand a command as its stderr.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestRunCLIOnATerminal: with stderr a terminal, the running cases show
// on one status line rewritten in place, and each result is a line of
// its own.
func TestRunCLIOnATerminal(t *testing.T) {
	master, slave := openPty(t)
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		io.Copy(&screen, master) // ends when the pair is closed
		close(read)
	}()
	noAuth := envsdk.Options{StopGrace: time.Second}
	tg := serveReference(t, newReference, noAuth, nil)
	var stdout bytes.Buffer
	code := conformance.RunCLI(t.Context(), []string{"--url", tg.BaseURL, "--profile", referenceProfile(t), "--serial",
		"--run", "auth/missing-token,contract/echo"}, &stdout, slave)
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	slave.Close()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		master.Close()
		<-read
	}
	out := strings.ReplaceAll(screen.String(), "\r\n", "\n") // the terminal's output processing
	for _, want := range []string{
		"\r\x1b[2Kconformance: auth/missing-token: case started",
		"\r\x1b[2Kconformance: contract/echo: case started",
		"FAIL  auth/missing-token",
		"PASS  contract/echo",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
}
