package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// screen is a fake terminal: it keeps the finished lines and the line
// the cursor is on, honouring carriage return and erase-line.
type screen struct {
	lines []string
	cur   string
	raw   bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.raw.Write(p)
	for rest := string(p); rest != ""; {
		switch {
		case strings.HasPrefix(rest, "\r\x1b[2K"):
			s.cur, rest = "", rest[len("\r\x1b[2K"):]
		case rest[0] == '\r':
			s.cur, rest = "", rest[1:]
		case rest[0] == '\n':
			s.lines, s.cur, rest = append(s.lines, s.cur), "", rest[1:]
		default:
			s.cur, rest = s.cur+rest[:1], rest[1:]
		}
	}
	return len(p), nil
}

func steps() []Event {
	return []Event{
		{Subject: "project a", Step: "uv sync", Status: Started},
		{Subject: "project b", Step: "uv sync", Status: Started},
		{Subject: "project a", Step: "uv sync", Status: Finished, Elapsed: 1500 * time.Millisecond},
		{Subject: "project b", Step: "uv sync", Status: Failed, Elapsed: 2 * time.Second, Detail: "exit status 1"},
		{Subject: "project a", Step: "setup", Status: Started},
	}
}

// TestTerminalRewritesOneLine: on a terminal the status line is rewritten
// in place, log lines and failures stay above it, and Done leaves it.
func TestTerminalRewritesOneLine(t *testing.T) {
	sc := &screen{}
	r := New(sc, true, "python-uv")
	ev := steps()
	r.Report(ev[0])
	r.Report(ev[1])
	if sc.cur != "python-uv: project b: uv sync started (+1 more)" || len(sc.lines) != 0 {
		t.Fatalf("screen %q / %q", sc.lines, sc.cur)
	}
	r.Write([]byte("level=INFO msg=hello\n"))
	r.Report(ev[2])
	if sc.cur != "python-uv: project b: uv sync started" {
		t.Errorf("after a finished step the line shows %q", sc.cur)
	}
	r.Report(ev[3])
	r.Report(ev[4])
	r.Done()
	want := []string{
		"level=INFO msg=hello",
		"python-uv: project b: uv sync failed in 2s: exit status 1",
		"python-uv: project a: setup started",
	}
	if strings.Join(sc.lines, "\n") != strings.Join(want, "\n") || sc.cur != "" {
		t.Errorf("screen:\n%s\ncurrent %q\nwant:\n%s", strings.Join(sc.lines, "\n"), sc.cur, strings.Join(want, "\n"))
	}
}

// TestPlainWritesLines: elsewhere every event is one line, in order, with
// no control characters.
func TestPlainWritesLines(t *testing.T) {
	var b bytes.Buffer
	r := New(&b, false, "docker")
	for _, e := range steps() {
		r.Report(e)
	}
	r.Write([]byte("log\n"))
	r.Done()
	want := "docker: project a: uv sync started\n" +
		"docker: project b: uv sync started\n" +
		"docker: project a: uv sync finished in 1.5s\n" +
		"docker: project b: uv sync failed in 2s: exit status 1\n" +
		"docker: project a: setup started\n" +
		"log\n"
	if b.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestIsTerminal: a regular file and a pipe are not terminals.
func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	if IsTerminal(f) || IsTerminal(pw) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file, pipe or buffer taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !IsTerminal(tty) {
			t.Error("/dev/tty not taken for a terminal")
		}
	}
}
