package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestLogPreallocated: on Linux a new log file reserves its space up
// front, and a store that stopped without a sync point (a crash) replays
// it whole, the unused zeros after its last entry being no torn tail.
func TestLogPreallocated(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a", "b"}, 5, func(b []byte) []byte { return b })
	logs := logFiles(t, dir)
	fi, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && fi.Size() != maxLogPrealloc {
		probe, err := os.Create(filepath.Join(t.TempDir(), "probe"))
		if err != nil {
			t.Fatal(err)
		}
		defer probe.Close()
		if preallocate(probe, 1<<20) {
			t.Fatalf("log file is %d bytes, want %d preallocated", fi.Size(), maxLogPrealloc)
		}
		t.Skip("this file system cannot preallocate")
	}
	if n := len(logBytes(t, logs[0])); n == 0 || int64(n) >= fi.Size() {
		t.Fatalf("log file of %d bytes holds %d bytes of entries", fi.Size(), n)
	}
	fs := openT(t, dir, noSyncPoints)
	readAll(t, fs, "a", 5)
	readAll(t, fs, "b", 5)
	if kept, _ := filepath.Glob(filepath.Join(dir, commitLogDir, "*.torn-*")); len(kept) != 0 {
		t.Errorf("replay kept %v", kept)
	}
}

// TestLogTornRoundInPreallocatedFile: a crash during a round's write into
// a preallocated log file leaves the blocks the write did not reach
// reading as zero. Replay cuts such an entry as torn, whichever blocks are
// missing, and keeps its bytes; the same entry complete with one flipped
// byte is damage.
func TestLogTornRoundInPreallocatedFile(t *testing.T) {
	dir := t.TempDir()
	crashedStore(t, dir, []string{"a"}, 5, func([]byte) []byte { return nil })
	logs := logFiles(t, dir)
	path := logs[len(logs)-1]
	orig := logBytes(t, path)
	big := Record{Sequence: 6, Kind: "k", Data: json.RawMessage(`"` + strings.Repeat("x", 3000) + `"`)}
	entry := appendLogEntry(nil, "a", 1, int64(len(orig)), appendFrame(nil, &big))
	off := len(orig)
	sector := func(i int) (int, int) { // the i-th whole sector inside the entry
		s := (off/tornSector + 1 + i) * tornSector
		return s - off, s - off + tornSector
	}
	cases := map[string]func(e []byte) []byte{
		"cut short":        func(e []byte) []byte { return e[:len(e)/2] },
		"header only":      func(e []byte) []byte { return e[:logEntryHeader] },
		"a sector missing": func(e []byte) []byte { i, j := sector(2); clear(e[i:j]); return e },
		"first part missing": func(e []byte) []byte {
			i, _ := sector(0)
			clear(e[:i])
			return e
		},
		"last sectors missing": func(e []byte) []byte { i, _ := sector(3); clear(e[i:]); return e },
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			os.MkdirAll(filepath.Join(d, commitLogDir), 0o700)
			p := filepath.Join(d, commitLogDir, filepath.Base(path))
			file := make([]byte, 1<<20)
			copy(file, orig)
			copy(file[off:], tear(slices.Clone(entry)))
			os.WriteFile(p, file, 0o600)
			fs := openT(t, d, noSyncPoints)
			readAll(t, fs, "a", 5)
			end := keptEnd(len(file), off+zeroTrimmed(file[off:]))
			kept := fmt.Sprintf("%s.torn-%d", p, off)
			if got, err := os.ReadFile(kept); err != nil || !bytes.Equal(got, file[off:end]) {
				t.Fatalf("kept %s: %d bytes, %v; want the %d bytes cut", kept, len(got), err, end-off)
			}
		})
	}
	// Complete, one byte flipped, zeros after: damage, left as it is.
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, commitLogDir), 0o700)
	p := filepath.Join(d, commitLogDir, filepath.Base(path))
	file := make([]byte, 1<<20)
	copy(file, orig)
	copy(file[off:], entry)
	file[off+len(entry)/2] ^= 0x01
	os.WriteFile(p, file, 0o600)
	fs, err := OpenFileStore(d, noSyncPoints)
	if err == nil {
		fs.Close()
	}
	var le *LogDamagedError
	if !errors.As(err, &le) || le.Offset != int64(off) {
		t.Fatalf("OpenFileStore = %v, want damage at offset %d", err, off)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, file) {
		t.Errorf("damaged log was rewritten")
	}
}
