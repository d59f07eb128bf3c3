package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFileRotates: a file about to pass its bound is renamed to .1 and
// restarted; both stay within the bound and hold whole lines, newest in
// the current file.
func TestFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	const max = 4096
	f, err := OpenFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := f.Write(context.Background(), Entry{SessionID: "s", Record: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > max || st.Size() < max/2 {
			t.Errorf("%s is %d bytes, bound %d", p, st.Size(), max)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", p, st.Mode())
		}
	}
	cur, old := readLines(t, path), readLines(t, path+".1")
	last := cur[len(cur)-1]["record"]
	if string(last) != `{"n":199}` {
		t.Errorf("last line's record %s", last)
	}
	var firstCur, lastOld struct{ N int }
	json.Unmarshal(cur[0]["record"], &firstCur)
	json.Unmarshal(old[len(old)-1]["record"], &lastOld)
	if firstCur.N != lastOld.N+1 {
		t.Errorf("rotation lost or repeated lines: .1 ends at %d, the file starts at %d", lastOld.N, firstCur.N)
	}
	// A line beyond the bound is refused without touching the file.
	f, _ = OpenFile(path, max)
	before, _ := os.ReadFile(path)
	if err := f.Write(context.Background(), Entry{Record: json.RawMessage(`"` + strings.Repeat("x", max) + `"`)}); err == nil {
		t.Error("a line beyond the file bound was written")
	}
	f.Close(context.Background())
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a refused line changed the file")
	}
}

// TestFileFaultPasses: a file whose writes fail (a full device, here
// /dev/full standing in for the file) drops entries and counts them; the
// turn's Accept is unaffected; once the fault is gone the next entry lands
// in a new file.
func TestFileFaultPasses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /dev/full")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Sink: f, SessionRate: 1e6, GlobalRate: 1e6})
	for range 3 {
		if err := p.Accept(toolOrigin("a"), []byte(`{"during":"fault"}`)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return p.Stats().Dropped[DropWriteError] == 3 })
	if err := os.Remove(path); err != nil { // the fault passes
		t.Fatal(err)
	}
	p.Accept(toolOrigin("a"), []byte(`{"after":"fault"}`))
	waitFor(t, func() bool { return p.Stats().Written == 1 })
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 1 || string(lines[0]["record"]) != `{"after":"fault"}` {
		t.Errorf("lines after the fault: %v", lines)
	}
}

// TestFileEndsTornLine: after a failed write the reopened file first ends
// the half-written line, so every later line parses.
func TestFileEndsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(`{"whole":1}`+"\n"+`{"recorded_at_ms":1,"sess`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.fail() // as after a write that failed half-way
	if err := f.Write(context.Background(), Entry{SessionID: "s", Record: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	f.Close(context.Background())
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[1] != `{"recorded_at_ms":1,"sess` {
		t.Fatalf("file %q", data)
	}
	var e Entry
	if err := json.Unmarshal([]byte(lines[2]), &e); err != nil || e.SessionID != "s" {
		t.Errorf("line after the torn one: %q %v", lines[2], err)
	}
}

// TestOpenFileRefusesDirectory: a path that cannot hold the file fails at
// start.
func TestOpenFileRefusesDirectory(t *testing.T) {
	if _, err := OpenFile(t.TempDir(), 0); err == nil {
		t.Error("a directory was opened as the telemetry file")
	}
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing", "t.jsonl"), 0); err == nil {
		t.Error("a file in a missing directory was opened")
	}
}

// TestFileDeviceIsNotRotated: a device standing in for the file (here
// /dev/null, as /dev/stdout would) is written to past the bound; it is not
// renamed to .1 and replaced by a regular file.
func TestFileDeviceIsNotRotated(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil {
		t.Skip("no " + os.DevNull)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.Symlink(os.DevNull, path); err != nil {
		t.Skip(err)
	}
	const max = 1024
	f, err := OpenFile(path, max)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := f.Write(context.Background(), Entry{SessionID: "s", Record: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(path); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s no longer stands for %s: %v, %v", path, os.DevNull, st.Mode(), err)
	}
	if _, err := os.Lstat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the device was rotated to %s.1", path)
	}
}
