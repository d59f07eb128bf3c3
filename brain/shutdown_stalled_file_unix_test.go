//go:build unix

package brain_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// TestShutdownWithStalledTelemetryReader: the telemetry file is a named
// pipe whose reader stopped reading (a stalled consumer of /dev/stdout,
// say), so the records of a turn cannot all be written. Close given one
// second returns within about that second and does not fail for it: the
// telemetry is best effort, and the log says the flush was cut short.
func TestShutdownWithStalledTelemetryReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "telemetry.pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The reader end is held open and never read from.
	reader, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	var logs envtest.Buffer
	b, id := startTelemetryWith(t, func(c *brain.Config) {
		c.Telemetry.File = path
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	// More than a pipe's buffer holds.
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 40<<10) + `"}`)
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{big, big, big, big}})

	const grant = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grant)
	defer cancel()
	start := time.Now()
	err = b.Server.Close(ctx)
	took := time.Since(start)
	if err != nil {
		t.Errorf("Close = %v, want nil: telemetry that cannot be written does not fail the shutdown", err)
	}
	if took > grant+2*time.Second {
		t.Errorf("Close given %v took %v", grant, took)
	}
	if !strings.Contains(logs.String(), "telemetry flush at shutdown cut short") {
		t.Errorf("the log does not say the telemetry flush was cut short:\n%s", logs.String())
	}
}
