package workspace

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// An append that creates its file and fails part-way because the disk is
// full leaves no file behind: the workspace is as it was before it, as a
// failed append to a file that exists leaves that file's old content.
func TestFailedAppendToNewFileLeavesNoFile(t *testing.T) {
	f := newFixture(t, Options{Root: fullfs.Mount(t, 1<<20), MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	r := f.exec(c, "write", map[string]any{"path": "log", "content": strings.Repeat("b", 1100<<10), "append": true}, nil)
	if r.Type != envapi.ReceiptFailure {
		t.Fatalf("an append beyond the disk's space answered %s", r.Type)
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{}, nil), &list)
	if len(list.Entries) != 0 {
		t.Errorf("entries after the failed append: %v, want none", list.Entries)
	}
	fails(t, f.exec(c, "read", map[string]any{"path": "log"}, nil), envapi.CodeNotFound)
}
