package brain_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPassivatedCountKept: on the file backend, brain_sessions_passivated
// counts the sessions on disk at most once per few seconds, however often
// /metrics is scraped, and when the sessions directory cannot be listed
// it keeps answering the last count (logging the failure once) rather
// than dropping to 0.
func TestPassivatedCountKept(t *testing.T) {
	const sessions = 40
	dir := t.TempDir()
	srv, err := brain.New(context.Background(), brain.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, srv)
	c, err := client.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range sessions {
		if _, err := c.Sessions.Create(context.Background(), api.CreateSessionRequest{Model: api.ModelConfig{Provider: "scripted", Name: "m"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Restarted, every session is on disk and none in memory.
	logs := &lockedBuffer{}
	srv, err = brain.New(context.Background(), brain.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	url = serve(t, srv)
	passivated := func() float64 {
		t.Helper()
		for _, line := range strings.Split(scrapeMetrics(t, url), "\n") {
			if v, ok := strings.CutPrefix(line, "brain_sessions_passivated "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatal("no brain_sessions_passivated in /metrics")
		return 0
	}
	srv.SetStoredEvery(time.Hour)
	before := srv.StoredListings()
	for i := range 3 {
		if n := passivated(); n != sessions {
			t.Fatalf("scrape %d: brain_sessions_passivated %v, want %d", i, n, sessions)
		}
	}
	if n := srv.StoredListings() - before; n != 1 {
		t.Errorf("three scrapes listed the sessions directory %d times, want once", n)
	}

	// The sessions directory gives way to a file: listing it fails.
	sessionsDir := filepath.Join(dir, "sessions")
	if err := os.Rename(sessionsDir, sessionsDir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sessionsDir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Remove(sessionsDir); err != nil {
			t.Error(err)
		}
		if err := os.Rename(sessionsDir+".away", sessionsDir); err != nil {
			t.Error(err)
		}
	}()
	srv.SetStoredEvery(0)
	before = srv.StoredListings()
	for i := range 3 {
		if n := passivated(); n != sessions {
			t.Errorf("scrape %d with the directory unlistable: brain_sessions_passivated %v, want the last count %d", i, n, sessions)
		}
	}
	if n := srv.StoredListings() - before; n != 3 {
		t.Errorf("%d listings tried for three scrapes with no count kept, want 3", n)
	}
	if n := strings.Count(logs.String(), "listing the stored sessions;"); n != 1 {
		t.Errorf("the listing failure was logged %d times, want once:\n%s", n, logs)
	}
}

// scrapeMetrics answers the body of GET /metrics.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}
