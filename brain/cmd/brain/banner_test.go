package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// bannerWriter collects what "brain serve" writes to stdout and reports
// when the start banner is complete.
type bannerWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	ready chan struct{}
	once  sync.Once
}

func (w *bannerWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "/transcript\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *bannerWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startBanner runs "brain serve" in-process on dataDir until its banner
// is printed, stops it, and answers the banner.
func startBanner(t *testing.T, dataDir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &bannerWriter{ready: make(chan struct{})}
	var errb strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- serve(ctx, []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "error", "--no-workspace"}, out, &errb)
	}()
	select {
	case <-out.ready:
	case code := <-done:
		t.Fatalf("serve exited %d before serving: %s", code, errb.String())
	case <-time.After(5 * time.Minute):
		t.Fatal("serve did not start")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}
	return out.String()
}

// TestServeBannerShowsSavedTokenOnlyByItsFile: the operator token is
// printed when "brain serve" generates it; a start that reads it from its
// file (every later start on the data directory) does not print it,
// since what the banner shows ends up in service logs, and its example
// reads the token from the file instead. Before, every start printed the
// saved token twice.
func TestServeBannerShowsSavedTokenOnlyByItsFile(t *testing.T) {
	t.Setenv("BRAIN_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "my data")
	first := startBanner(t, dir)
	raw, err := os.ReadFile(filepath.Join(dir, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if !strings.Contains(first, "export BRAIN_TOKEN="+token+"\n") {
		t.Fatalf("the first start does not print the generated token:\n%s", first)
	}
	again := startBanner(t, dir)
	if strings.Contains(again, token) {
		t.Fatalf("a later start printed the saved token:\n%s", again)
	}
	if !strings.Contains(again, "token: saved in "+filepath.Join(dir, "operator.token")) {
		t.Errorf("a later start does not say where the token is:\n%s", again)
	}
	// The example's export line, run by a shell, sets the token.
	var export string
	for _, line := range strings.Split(again, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "export BRAIN_TOKEN=") {
			export = l
		}
	}
	if export == "" {
		t.Fatalf("a later start prints no export line:\n%s", again)
	}
	got, err := exec.Command("sh", "-c", export+`; printf %s "$BRAIN_TOKEN"`).Output()
	if err != nil {
		t.Fatalf("%s: %v", export, err)
	}
	if string(got) != token {
		t.Errorf("%s set BRAIN_TOKEN to %q, want the saved token", export, got)
	}
}
