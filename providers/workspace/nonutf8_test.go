package workspace

import (
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A directory whose name is not UTF-8 is listed with its contents, like
// any other: what it holds is not hidden from a recursive list.
func TestListDescendsIntoNonUTF8Directories(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh(`d=$(printf 'd\377'); mkdir -p "$d/sub" && printf abc > "$d/in" && printf x > "$d/sub/deep"`), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("command: %+v", out)
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", toolset.ListInput{Recursive: true}, nil), &list)
	got := map[string]toolset.Entry{}
	for _, e := range list.Entries {
		got[e.Path] = e
	}
	want := []toolset.Entry{
		{Path: "d\ufffd", Type: toolset.TypeDir},
		{Path: "d\ufffd/in", Type: toolset.TypeFile, Size: 3},
		{Path: "d\ufffd/sub", Type: toolset.TypeDir},
		{Path: "d\ufffd/sub/deep", Type: toolset.TypeFile, Size: 1},
	}
	if len(list.Entries) != len(want) {
		t.Fatalf("list = %+v; want %+v", list.Entries, want)
	}
	for _, w := range want {
		if got[w.Path] != w {
			t.Fatalf("list = %+v; want %+v", list.Entries, want)
		}
	}
}

// A read-only directory inside a directory whose name is not UTF-8 does
// not keep teardown from removing the workspace.
func TestReadOnlyDirectoryUnderNonUTF8NameIsRemoved(t *testing.T) {
	post, c, root := startUnprivilegedSession(t)
	accepted(t, post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, post(c.Execute(tool("command"), mustJSON(t, sh(`d=$(printf 'd\377'); mkdir -p "$d/ro/sub" && echo x > "$d/ro/sub/f" && chmod 0555 "$d/ro/sub" "$d/ro" && ! touch "$d/ro/g" 2>/dev/null`)), nil)), &out)
	if out.ExitCode != 0 {
		t.Fatalf("the command could write into a read-only directory; the test shows nothing: %+v", out)
	}
	accepted(t, post(c.Teardown()))
	if dirs := workspaceDirs(t, root); len(dirs) != 0 {
		t.Errorf("teardown left %v", dirs)
	}
}
