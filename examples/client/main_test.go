package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestAgainstBrainServe runs the client against "brain serve", built here
// and served on a free port over a temporary data directory.
func TestAgainstBrainServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs brain serve")
	}
	url := startBrain(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("echo", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(ctx, []string{"--url", url, "--token", brainToken}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		expectLines(t, out.String(), "session ", "[1] session_creation_started", "> hello", "] turn_started", "] turn_ended",
			"transcript:", "  user: hello", "  assistant: echo: hello")
	})

	t.Run("streamed-tool-free-reply", func(t *testing.T) {
		var out bytes.Buffer
		script := `{"reply":"words arrive live","stream":true,"delay_ms":300}`
		if err := run(ctx, []string{"--url", url, "--token", brainToken, "--message", script, "--end"}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		expectLines(t, out.String(), "> "+script, "  live: words arrive live", "] turn_ended",
			"  user: "+script, "  assistant: words arrive live", "session ended")
	})

	t.Run("failed-turn", func(t *testing.T) {
		var out bytes.Buffer
		script := `{"fail":{"code":"rate_limited","message":"slow down"}}`
		if err := run(ctx, []string{"--url", url, "--token", brainToken, "--message", script}, &out, &out); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		expectLines(t, out.String(), "] model_call_failed", "] turn_failed", "turn failed: ", "transcript:")
	})

	t.Run("wrong-token", func(t *testing.T) {
		var out bytes.Buffer
		err := run(ctx, []string{"--url", url, "--token", "wrong"}, &out, &out)
		var ae *api.ApiError
		if !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
			t.Fatalf("err = %v", err)
		}
	})
}

// expectLines checks that each want starts (or, with a leading "]", is
// contained in) some line of out, in order.
func expectLines(t *testing.T, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		found := false
		for ; i < len(lines); i++ {
			l := lines[i]
			if strings.HasPrefix(l, w) || (strings.HasPrefix(w, "]") && strings.Contains(l, w)) || (strings.HasPrefix(w, "[") && strings.Contains(l, w)) {
				found = true
				i++
				break
			}
		}
		if !found {
			t.Fatalf("output lacks %q (in order):\n%s", w, out)
		}
	}
}

const brainToken = "example-operator-token"

// startBrain builds the brain binary and runs "brain serve" on a free
// loopback port over a data directory under dir; it stops with the test.
func startBrain(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "brain")
	build := exec.Command("go", "build", "-o", bin, "github.com/brain-in-go/brain/brain/cmd/brain")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build brain: %v\n%s", err, out)
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--token", brainToken, "--no-workspace"}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
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
	return waitLine(t, stdout, "Brain is serving on ")
}

// waitLine waits for a line starting with prefix in out and returns the
// rest of it.
func waitLine(t *testing.T, out *syncBuffer, prefix string) string {
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

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
