package docker

import (
	"fmt"
	"testing"
)

// TestListLeavesOutACutEntry: a listing the output cap cut ends in the
// middle of an entry; that entry is left out, not answered with a cut
// path, and every whole entry before it is kept.
func TestListLeavesOutACutEntry(t *testing.T) {
	whole := "file\x0012\x00src/main.go\x00dir\x000\x00src/pkg\x00"
	for cut := len(whole) - 1; cut > len("file\x0012\x00src/main.go\x00"); cut-- {
		got := listEntries([]byte(whole[:cut]), "w")
		if len(got) != 1 || got[0].Path != "w/src/main.go" || got[0].Size != 12 || got[0].Type != "file" {
			t.Fatalf("listing cut at %d: %+v, want the one whole entry", cut, got)
		}
	}
	got := listEntries([]byte(whole), ".")
	if s := fmt.Sprint(got); len(got) != 2 || got[1].Path != "src/pkg" || got[1].Type != "dir" {
		t.Fatalf("whole listing: %s", s)
	}
	if got := listEntries(nil, "."); got == nil || len(got) != 0 {
		t.Fatalf("empty listing: %#v, want no entries", got)
	}
}
