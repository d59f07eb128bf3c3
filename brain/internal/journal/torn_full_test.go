package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/internal/fullfs"
)

// A session whose final frame was cut by a crash is opened on a full disk:
// the cut bytes cannot be kept, so the open fails with ENOSPC, every time
// it is tried, and leaves nothing behind; once space is back the open cuts
// the frame, the cut bytes are kept whole in one file, and appends go on
// where the durable records end.
func TestTornTailOnFullDisk(t *testing.T) {
	dir := fullfs.Mount(t, 4<<20)
	sdir := filepath.Join(dir, "sessions")
	big := json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 64<<10)) + `"`)
	fs := openT(t, sdir, nil)
	if err := fs.Append(bg, "s", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := fs.Append(bg, "s", 4, []Record{{Kind: "k", Data: big}}); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segPath(sdir, "s", 1)
	whole := mustRead(t, seg)
	offs := frameOffsets(t, seg)
	cut := offs[3]
	if err := os.Truncate(seg, int64(len(whole)-100)); err != nil {
		t.Fatal(err)
	}

	filler := fullfs.Fill(t, dir)
	fs = openT(t, sdir, nil)
	for range 5 {
		if _, err := fs.Next(bg, "s"); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Next of a session with a torn tail on a full disk = %v; want ENOSPC", err)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(seg))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".torn-") {
			t.Errorf("failed opens on a full disk left %s", e.Name())
		}
	}
	filler.Free(t)

	if next, err := fs.Next(bg, "s"); err != nil || next != 4 {
		t.Fatalf("Next once space is back = %d, %v; want 4", next, err)
	}
	entries, _ = os.ReadDir(filepath.Dir(seg))
	var kept []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".torn-") {
			kept = append(kept, e.Name())
		}
	}
	want := filepath.Base(seg) + ".torn-" + strconv.FormatInt(cut, 10)
	if len(kept) != 1 || kept[0] != want {
		t.Fatalf("cut bytes kept in %v; want [%s]", kept, want)
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(seg), want)); err != nil || !bytes.Equal(b, whole[cut:len(whole)-100]) {
		t.Errorf("kept bytes: %d bytes, %v; want the %d cut", len(b), err, int64(len(whole)-100)-cut)
	}
	if err := fs.Append(bg, "s", 4, numbered(4, 1)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	fs = openT(t, sdir, nil)
	wantNumbered(t, fs, "s", 4)
}
