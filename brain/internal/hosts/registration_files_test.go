//go:build unix

package hosts

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/internal/pipetest"
)

// logBuffer collects a registry's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// registered registers one host in dir and closes the registry.
func registered(t *testing.T, dir string) (id, token string) {
	t.Helper()
	r := open(t, Config{Dir: dir})
	reg, err := r.Register(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return reg.HostID, reg.Token
}

// TestRegistrationPipeDoesNotHoldTheStart: a named pipe where a host's
// registration file belongs is skipped, and logged, as a damaged
// registration is, instead of holding Open (and the server's start) in a
// read that never ends; the other registrations load.
func TestRegistrationPipeDoesNotHoldTheStart(t *testing.T) {
	dir := t.TempDir()
	id, token := registered(t, dir)
	fifo := filepath.Join(dir, "host_"+strings.Repeat("p", 24)+".json")
	pipetest.Make(t, fifo)
	var logs logBuffer
	type opened struct {
		r   *Registry
		err error
	}
	o := pipetest.Within(t, fifo, 10*time.Second, func() opened {
		r, err := Open(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		return opened{r, err}
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.r.Close()
	if err := o.r.Authenticate(id, token); err != nil {
		t.Errorf("the registered host after Open: %v", err)
	}
	if o.r.Len() != 1 {
		t.Errorf("%d hosts after Open, want 1", o.r.Len())
	}
	if l := logs.String(); !strings.Contains(l, "skipping a damaged host registration") || !strings.Contains(l, filepath.Base(fifo)) || !strings.Contains(l, "not a regular file") {
		t.Errorf("log %q does not say the pipe was skipped", l)
	}
}

// TestOversizedRegistrationIsNotReadWhole: a registration file far larger
// than any registration is skipped, and logged, without being read into
// memory; the other registrations load.
func TestOversizedRegistrationIsNotReadWhole(t *testing.T) {
	const size = 64 << 20
	dir := t.TempDir()
	id, token := registered(t, dir)
	big := filepath.Join(dir, "host_"+strings.Repeat("b", 24)+".json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: it takes no room on disk, but reading it whole would
	// take its size in memory.
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var logs logBuffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := Open(Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := after.TotalAlloc - before.TotalAlloc; got >= size/8 {
		t.Errorf("Open allocated %d bytes for a %d-byte registration file", got, size)
	}
	if err := r.Authenticate(id, token); err != nil {
		t.Errorf("the registered host after Open: %v", err)
	}
	if r.Len() != 1 {
		t.Errorf("%d hosts after Open, want 1", r.Len())
	}
	if l := logs.String(); !strings.Contains(l, "skipping a damaged host registration") || !strings.Contains(l, filepath.Base(big)) {
		t.Errorf("log %q does not say the file was skipped", l)
	}
}

// TestRegistrationAsWrittenFitsTheBound: the longest registration
// Register can write (the longest host id, the widest time) loads, and
// one re-indented by hand does too.
func TestRegistrationAsWrittenFitsTheBound(t *testing.T) {
	id := "host_" + strings.Repeat("Z", 32)
	rec := `{"host_id":"` + id + `","token_sha256":"` + strings.Repeat("ab", 32) + `","registered_at_ms":-9223372036854775808}`
	if len(rec) > maxRecordBytes {
		t.Fatalf("a registration of %d bytes is over the bound of %d", len(rec), maxRecordBytes)
	}
	indented := strings.NewReplacer(`{`, "{\n    ", `,`, ",\n    ", `}`, "\n}\n").Replace(rec)
	for _, text := range []string{rec, indented} {
		path := filepath.Join(t.TempDir(), id+".json")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if h, err := load(path); err != nil || h.id != id {
			t.Errorf("load of %q = %v", text, err)
		}
	}
	if _, err := load(t.TempDir()); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("load of a directory = %v, want it refused", err)
	}
}
