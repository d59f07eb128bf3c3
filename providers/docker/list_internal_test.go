package docker

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// TestListLeavesOutACutEntry: a listing the output cap cut ends in the
// middle of an entry; that entry is left out, not answered with a cut
// path, and every whole entry before it is kept.
func TestListLeavesOutACutEntry(t *testing.T) {
	whole := "file\x0012\x00src/main.go\x00dir\x000\x00src/pkg\x00"
	for cut := len(whole) - 1; cut > len("file\x0012\x00src/main.go\x00"); cut-- {
		got, _ := listEntries([]byte(whole[:cut]), "w", math.MaxInt)
		if len(got) != 1 || got[0].Path != "w/src/main.go" || got[0].Size != 12 || got[0].Type != "file" {
			t.Fatalf("listing cut at %d: %+v, want the one whole entry", cut, got)
		}
	}
	got, _ := listEntries([]byte(whole), ".", math.MaxInt)
	if s := fmt.Sprint(got); len(got) != 2 || got[1].Path != "src/pkg" || got[1].Type != "dir" {
		t.Fatalf("whole listing: %s", s)
	}
	if got, _ := listEntries(nil, ".", math.MaxInt); got == nil || len(got) != 0 {
		t.Fatalf("empty listing: %#v, want no entries", got)
	}
}

// A listing within the raw cap can still answer more than Brain takes:
// JSON writes six bytes for some of a name's ('<' is "\u003c") and
// repeats the listed directory's path in every entry. The entries stop
// before the first that would make the list's JSON larger than its bound,
// whole and in order, and the list says it was cut.
func TestListEntriesStopAtTheirBound(t *testing.T) {
	base := strings.Repeat("<", 200)
	var raw strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&raw, "file\x001\x00<<<<%04d\x00", i)
	}
	const bound = 64 << 10
	got, cut := listEntries([]byte(raw.String()), base, bound)
	out, err := json.Marshal(toolset.ListOutput{Entries: got, Truncated: cut})
	if err != nil {
		t.Fatal(err)
	}
	if !cut || len(out) > bound || len(got) < 40 || len(got) >= 1000 {
		t.Fatalf("%d of 1000 entries in %d bytes (bound %d), cut %v", len(got), len(out), bound, cut)
	}
	for i, e := range got {
		if want := fmt.Sprintf("%s/<<<<%04d", base, i); e.Path != want {
			t.Fatalf("entry %d is %q, want %q", i, e.Path, want)
		}
	}
	next, _ := json.Marshal(got[0])
	if len(out)+len(next)+1 <= bound {
		t.Errorf("cut at %d bytes though the next entry (%d bytes) fits in %d", len(out), len(next), bound)
	}
	if all, cut := listEntries([]byte(raw.String()), base, math.MaxInt); cut || len(all) != 1000 {
		t.Errorf("without a bound: %d entries, cut %v", len(all), cut)
	}
}
