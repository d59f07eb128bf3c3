package workspace

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// A write that fails after it created the missing directories of its path
// removes them again: the workspace is left as the write found it, the
// directories that were there before kept.
func TestFailedWriteRemovesTheDirectoriesItCreated(t *testing.T) {
	f := newFixture(t, Options{Root: fullfs.Mount(t, 1<<20), MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "keep/old", "content": "1"}, nil), nil)

	r := f.exec(c, "write", map[string]string{"path": "keep/new/deeper/f", "content": strings.Repeat("x", 2<<20)}, nil)
	if r.Type != envapi.ReceiptFailure || !strings.Contains(r.Message, "no space left") {
		t.Fatalf("a write beyond the disk's space answered %s %s: %s", r.Type, r.Code, r.Message)
	}
	r = f.exec(c, "write", map[string]string{"path": "top/f", "content": strings.Repeat("x", 2<<20)}, nil)
	if r.Type != envapi.ReceiptFailure {
		t.Fatalf("a write beyond the disk's space answered %s", r.Type)
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"recursive": true}, nil), &list)
	var got []string
	for _, e := range list.Entries {
		got = append(got, e.Path)
	}
	if strings.Join(got, " ") != "keep keep/old" {
		t.Errorf("entries after the failed writes: %v, want keep keep/old", got)
	}
}

// The same on any file system: a name too long for it fails the write
// once its parents were made.
func TestWriteOfTooLongNameRemovesTheDirectoriesItCreated(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "keep/old", "content": "1"}, nil), nil)

	fails(t, f.exec(c, "write", map[string]string{"path": "keep/a/b/" + strings.Repeat("n", 300), "content": "x"}, nil), envapi.CodeInvalidInput)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"recursive": true}, nil), &list)
	var got []string
	for _, e := range list.Entries {
		got = append(got, e.Path)
	}
	if strings.Join(got, " ") != "keep keep/old" {
		t.Errorf("entries after the failed write: %v, want keep keep/old", got)
	}
}
