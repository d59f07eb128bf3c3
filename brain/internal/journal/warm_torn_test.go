package journal

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A session whose first record was cut by a crash, first used by a Read
// from its start, holds no record: the open keeps nothing of the cut
// bytes in memory, so they do not take the store's budget for kept bytes
// for as long as the session stays loaded. Records appended afterwards
// read back whole.
func TestTornFirstRecordKeepsNothingInMemory(t *testing.T) {
	dir := t.TempDir()
	big := json.RawMessage(`"` + strings.Repeat("x", 4<<20) + `"`)
	fs := openT(t, dir, nil)
	if err := fs.Append(bg, "t", 1, []Record{{Kind: "k", Data: big}}); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segPath(dir, "t", 1)
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()-10); err != nil {
		t.Fatal(err)
	}

	fs = openT(t, dir, nil)
	if recs, err := fs.Read(bg, "t", 0, 0, 0); err != nil || len(recs) != 0 {
		t.Fatalf("Read of a session whose only record was cut = %d records, %v; want none", len(recs), err)
	}
	if n := fs.warmBytes.Load(); n != 0 {
		t.Errorf("the open of a session with no record keeps %d bytes in memory; want none", n)
	}
	if err := fs.Append(bg, "t", 1, numbered(1, 3)); err != nil {
		t.Fatal(err)
	}
	wantNumbered(t, fs, "t", 3)
}
