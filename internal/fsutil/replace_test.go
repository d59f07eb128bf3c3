package fsutil

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// ReplaceIn writes a file in a subdirectory of the root, runs Prepare on
// the new file before it is in place, replaces a symbolic link rather
// than the file it names, and leaves no temporary file.
func TestReplaceIn(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(dir, "sub", "link")); err != nil {
		t.Fatal(err)
	}
	r := openRoot(t, dir)
	prepared := false
	err := ReplaceIn(r, "sub/f", []byte("one"), ReplaceOptions{Perm: 0o600, Prepare: func(f *os.File) error {
		prepared = true
		if _, err := os.Stat(filepath.Join(dir, "sub", "f")); !os.IsNotExist(err) {
			t.Errorf("the file is in place before Prepare ran: %v", err)
		}
		return f.Chmod(0o751)
	}})
	if err != nil || !prepared {
		t.Fatalf("ReplaceIn = %v (prepared %v)", err, prepared)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub", "f")); err != nil || fi.Mode() != 0o751 {
		t.Errorf("sub/f: %v, %v; want mode 0751", fi, err)
	}
	if err := ReplaceIn(r, "sub/link", []byte("two"), ReplaceOptions{Perm: 0o600}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "other")); string(b) != "other" {
		t.Errorf("the file a replaced link named holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sub", "link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("sub/link after the replace: %v, %v; want a regular file", fi, err)
	}
	if got := names(t, filepath.Join(dir, "sub")); !slices.Equal(got, []string{"f", "link"}) {
		t.Errorf("sub holds %v", got)
	}
}

// A file whose name is as long as a name may be is replaced all the same:
// its temporary file repeats only what fits, and is recognised as its.
func TestReplaceLongName(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", maxName)
	if err := WriteFileAtomic(filepath.Join(dir, long), []byte("x"), 0o600); err != nil {
		t.Fatalf("WriteFileAtomic of a %d-byte name = %v", len(long), err)
	}
	tmp := TempName(long)
	if len(tmp) > maxName || !IsTempOf(tmp, long) || !IsTemp(tmp) || !isLeftoverOf(tmp, long) {
		t.Errorf("TempName = %q (%d bytes), not recognised as the temporary file of the long name", tmp, len(tmp))
	}
	if got := names(t, dir); len(got) != 1 || got[0] != long {
		t.Errorf("directory holds %v", got)
	}
}

// RemoveLeftovers removes the temporary files of replaces of the same
// file killed part way, and nothing else: not those of other files, not
// files that only look alike, not directories, and not the temporary file
// of a replace still running.
func TestReplaceInRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	r := openRoot(t, dir)
	running := TempName("f")
	leftovers := []string{TempName("f"), ".tmp-f-1", ".tmp-f-0123456789abcdef"}
	kept := []string{running, ".tmp-g-1", ".tmp-ff-1", ".tmp-f-", ".tmp-f-x1", ".tmp-f-12345678901", ".tmp-f-0123456789ABCDEF", "f-1", ".f.tmp-1"}
	for _, n := range append(slices.Clone(leftovers), kept...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("left"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".tmp-f-2"), 0o700); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, ".tmp-f-2")
	inflight.add(r, running)
	defer inflight.remove(r, running)

	if err := ReplaceIn(r, "f", []byte("new"), ReplaceOptions{Perm: 0o600, RemoveLeftovers: true}); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"f"}, kept...)
	slices.Sort(want)
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("directory holds %v, want %v", got, want)
	}
	// Without the option nothing is removed.
	for _, n := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("left"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := ReplaceIn(r, "f", []byte("newer"), ReplaceOptions{Perm: 0o600}); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != len(want)+len(leftovers) {
		t.Errorf("a replace without RemoveLeftovers left %v", got)
	}
}
