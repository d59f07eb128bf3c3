package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
	"github.com/brain-in-go/brain/internal/fullfs"
)

// A write that fails part-way because the disk is full leaves the file as
// it was: the new content is written beside it and renamed over it only
// once complete. No temporary file is left behind, and the space is free
// again for the next write.
func TestWriteOnFullDiskKeepsOldContent(t *testing.T) {
	f := newFixture(t, Options{Root: fullfs.Mount(t, 1<<20), MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	old := strings.Repeat("a", 600<<10)
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": old}, nil), nil)

	r := f.exec(c, "write", map[string]string{"path": "f", "content": strings.Repeat("b", 1100<<10)}, nil)
	if r.Type != envapi.ReceiptFailure {
		t.Fatalf("a write beyond the disk's space answered %s", r.Type)
	}
	if !strings.Contains(r.Message, "no space left") {
		t.Errorf("message %q does not say the disk is full", r.Message)
	}
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "f"}, nil), &rd)
	if rd.Size != int64(len(old)) || rd.Content != old {
		t.Fatalf("after the failed write f holds %d bytes (%.10q...), want its old %d", rd.Size, rd.Content, len(old))
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{}, nil), &list)
	if len(list.Entries) != 1 || list.Entries[0].Path != "f" {
		t.Errorf("entries after the failed write: %v", list.Entries)
	}
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": "small"}, nil), nil)
	ok(t, f.exec(c, "read", map[string]string{"path": "f"}, nil), &rd)
	if rd.Content != "small" {
		t.Errorf("f holds %q after a write that fits", rd.Content)
	}
}

// The same holds for an edit whose result does not fit on the disk.
func TestEditOnFullDiskKeepsOldContent(t *testing.T) {
	f := newFixture(t, Options{Root: fullfs.Mount(t, 1<<20), MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	old := strings.Repeat("x", 400<<10) + "MARK\n"
	ok(t, f.exec(c, "write", map[string]string{"path": "f", "content": old}, nil), nil)
	ok(t, f.exec(c, "write", map[string]string{"path": "filler", "content": strings.Repeat("y", 300<<10)}, nil), nil)

	r := f.exec(c, "edit", map[string]string{"path": "f", "old": "MARK", "new": strings.Repeat("z", 800<<10)}, nil)
	if r.Type != envapi.ReceiptFailure {
		t.Fatalf("an edit beyond the disk's space answered %s", r.Type)
	}
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "f"}, nil), &rd)
	if rd.Size != int64(len(old)) || rd.Content != old {
		t.Fatalf("after the failed edit f holds %d bytes, want its old %d", rd.Size, len(old))
	}
}

// A replaced file keeps its permissions, and a write or edit through a
// symbolic link inside the workspace changes the file it names and keeps
// the link.
func TestReplaceKeepsModeAndLinks(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("mkdir sub && printf 'echo 1\\n' > sub/run.sh && chmod 750 sub/run.sh && ln -s sub/run.sh link && ln -s link link2"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("setup command: %+v", out)
	}
	dir := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0])
	// Where the test may, the file belongs to someone else, and keeps that
	// owner.
	owner := os.Geteuid() == 0
	if owner {
		if err := os.Chown(filepath.Join(dir, "sub/run.sh"), 4321, 4322); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step, want string) {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dir, "sub/run.sh"))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o750 {
			t.Errorf("%s: sub/run.sh has mode %v, want -rwxr-x---", step, fi.Mode())
		}
		if st := fi.Sys().(*syscall.Stat_t); owner && (st.Uid != 4321 || st.Gid != 4322) {
			t.Errorf("%s: sub/run.sh belongs to %d:%d, want 4321:4322", step, st.Uid, st.Gid)
		}
		for _, l := range []string{"link", "link2"} {
			if fi, err := os.Lstat(filepath.Join(dir, l)); err != nil || fi.Mode().Type() != os.ModeSymlink {
				t.Errorf("%s: %s is no longer a link: %v %v", step, l, fi, err)
			}
		}
		got, err := os.ReadFile(filepath.Join(dir, "sub/run.sh"))
		if err != nil || string(got) != want {
			t.Errorf("%s: sub/run.sh holds %q, %v; want %q", step, got, err, want)
		}
	}
	ok(t, f.exec(c, "write", map[string]string{"path": "sub/run.sh", "content": "echo 2\n"}, nil), nil)
	check("write", "echo 2\n")
	ok(t, f.exec(c, "write", map[string]string{"path": "link2", "content": "echo 3\n"}, nil), nil)
	check("write through links", "echo 3\n")
	ok(t, f.exec(c, "edit", map[string]string{"path": "link", "old": "3", "new": "4"}, nil), nil)
	check("edit through a link", "echo 4\n")
	ok(t, f.exec(c, "write", map[string]any{"path": "link", "content": "echo 5\n", "append": true}, nil), nil)
	check("append through a link", "echo 4\necho 5\n")
}

// resolve finds the file a path's links lead to, the way opening the path
// would, relative to the directory each link is in.
func TestResolveFollowsLinksInside(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []func() error{
		func() error { return os.MkdirAll(filepath.Join(dir, "a/b"), 0o755) },
		func() error { return os.Symlink("../top", filepath.Join(dir, "a/up")) },
		func() error { return os.Symlink("a/b", filepath.Join(dir, "ab")) },
		func() error { return os.Symlink("../up", filepath.Join(dir, "a/b/upup")) },
		func() error { return os.Symlink("loop2", filepath.Join(dir, "loop1")) },
		func() error { return os.Symlink("loop1", filepath.Join(dir, "loop2")) },
		func() error { return os.Symlink("../../x", filepath.Join(dir, "a/out")) },
		func() error { return os.Symlink("/etc/passwd", filepath.Join(dir, "abs")) },
		func() error { return os.Symlink(".", filepath.Join(dir, "self")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for p, want := range map[string]string{
		"plain":     "plain",
		"a/up":      "top",
		"ab/upup":   "top",
		"ab/new":    "a/b/new",
		"self":      ".",
		"self/a/up": "top",
		"loop1":     envapi.CodeInvalidInput,
		"a/out":     envapi.CodePathEscape,
		"abs":       envapi.CodePathEscape,
	} {
		got, err := resolve(t.Context(), r, filepath.Clean(p), p)
		if err != nil {
			got = fmt.Sprint(err)
			var e *envsdk.Error
			if errors.As(err, &e) {
				got = e.Code
			}
		}
		if got != want {
			t.Errorf("resolve(%s) = %s, want %s", p, got, want)
		}
	}
}

// A provider killed in the middle of a replace leaves the temporary file
// beside the file (simulated here by placing one, in the form this
// release names them and in the form earlier ones did). The next write
// of that file removes them first, so that they neither linger in the
// workspace nor take the space the write needs; files of the session
// that merely look alike stay.
func TestReplaceRemovesLeftoverTemporaryFiles(t *testing.T) {
	f := newFixture(t, Options{Root: fullfs.Mount(t, 1<<20), MaxBytes: -1})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "sub/f", "content": strings.Repeat("a", 300<<10)}, nil), nil)
	dir := filepath.Join(f.root, "workspaces", workspaceDirs(t, f.root)[0], "sub")
	leftovers := map[string]int{
		".tmp-f-3141592653":       300 << 10,
		".tmp-f-0123456789abcdef": 300 << 10,
	}
	kept := map[string]int{
		".tmp-f-notes":        1,
		".tmp-g-123":          1,
		".tmp-ff-123":         1,
		"f-123":               1,
		".tmp-f-123456789012": 1,
	}
	for _, m := range []map[string]int{leftovers, kept} {
		for name, size := range m {
			if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	content := strings.Repeat("b", 300<<10)
	ok(t, f.exec(c, "write", map[string]string{"path": "sub/f", "content": content}, nil), nil)
	var list toolset.ListOutput
	ok(t, f.exec(c, "list", map[string]any{"path": "sub"}, nil), &list)
	var got []string
	for _, e := range list.Entries {
		got = append(got, filepath.Base(e.Path))
	}
	want := []string{"f"}
	for name := range kept {
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("entries after the write: %v, want %v", got, want)
	}
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "sub/f"}, nil), &rd)
	if rd.Content != content {
		t.Errorf("sub/f holds %d bytes, want the %d written", rd.Size, len(content))
	}
}
