package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer is a bytes.Buffer safe for the pipeline's writer and the test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines answers the messages logged, each with its failure_spells_not_logged.
func (b *logBuffer) lines(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Msg      string `json:"msg"`
			NotSaid  *int   `json:"failure_spells_not_logged"`
			ErrorMsg string `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.NotSaid != nil {
			rec.Msg += " (" + strings.Repeat("+", *rec.NotSaid) + ")"
		}
		out = append(out, rec.Msg)
	}
	return out
}

// TestFlappingSinkIsLoggedOnceAMinute: a sink that fails and recovers
// over and over (here a telemetry file whose rotation fails while a
// directory stands where the rotated file goes) does not write two lines
// to the server's log per failure: the first failure and its recovery
// are logged, the spells after it within a minute are counted, and the
// next failure past the minute says how many were not logged. A spell
// left unlogged that goes on is logged once the minute has passed.
func TestFlappingSinkIsLoggedOnceAMinute(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	f, err := OpenFile(path, 250) // every entry rotates the file
	if err != nil {
		t.Fatal(err)
	}
	var logged logBuffer
	clk := &clock{t: time.UnixMilli(1767225600000)}
	p := New(Options{Sink: f, SessionRate: 1e6, GlobalRate: 1e6, Now: clk.now,
		Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	defer p.Close(context.Background())

	rotated := path + ".1"
	blocked := filepath.Join(rotated, "in-the-way")
	block := func() { // rotating onto a non-empty directory fails
		t.Helper()
		if err := os.RemoveAll(rotated); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(blocked, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	unblock := func() {
		t.Helper()
		if err := os.RemoveAll(rotated); err != nil {
			t.Fatal(err)
		}
	}
	var dropped, written uint64
	flap := func() {
		t.Helper()
		block()
		p.Accept(toolOrigin("a"), []byte(`{"n":1}`))
		dropped++
		waitFor(t, func() bool { return p.Stats().Dropped[DropWriteError] == dropped })
		unblock()
		p.Accept(toolOrigin("a"), []byte(`{"n":2}`))
		written++
		waitFor(t, func() bool { return p.Stats().Written == written })
		clk.add(100 * time.Millisecond)
	}
	p.Accept(toolOrigin("a"), []byte(`{"n":0}`)) // the first line, rotated by the next
	written++
	waitFor(t, func() bool { return p.Stats().Written == written })

	const flaps = 50
	for range flaps {
		flap()
	}
	got := logged.lines(t)
	want := []string{"telemetry sink failed; records are dropped until it recovers ()", "telemetry sink recovered"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after %d failures, each followed by a recovery, within a minute the log says %d lines:\n%s\nwant:\n%s",
			flaps, len(got), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Past the minute, the next spell is logged with the count of those
	// that were not, and so is its recovery.
	clk.add(time.Minute)
	flap()
	got = logged.lines(t)[2:]
	want = []string{"telemetry sink failed; records are dropped until it recovers (" + strings.Repeat("+", flaps-1) + ")", "telemetry sink recovered"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("past the minute the log says:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A spell not logged when it began, because one was logged less than
	// a minute before, is logged by its first failure past the minute.
	flap()
	block()
	p.Accept(toolOrigin("a"), []byte(`{"n":3}`))
	dropped++
	waitFor(t, func() bool { return p.Stats().Dropped[DropWriteError] == dropped })
	if n := len(logged.lines(t)); n != 4 {
		t.Fatalf("a spell begun within the minute is logged at once: %q", logged.lines(t)[4:])
	}
	clk.add(time.Minute)
	p.Accept(toolOrigin("a"), []byte(`{"n":4}`))
	dropped++
	waitFor(t, func() bool { return p.Stats().Dropped[DropWriteError] == dropped })
	got = logged.lines(t)[4:]
	want = []string{"telemetry sink failed; records are dropped until it recovers (+)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("a spell that goes on past the minute is logged as:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
