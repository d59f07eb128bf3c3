package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"golang.org/x/sys/unix"
)

// chain makes under dir a chain of depth directories named d, the deepest
// holding the file f with content leaf and, where link is not "", a
// symbolic link out leading to link. Each directory is given mode and,
// where uid is not -1, owner uid; the test runs as root for that. It is
// made through open directories, one name at a time: its paths are far
// longer than the system takes.
func chain(t *testing.T, dir string, depth int, mode uint32, uid int, leaf, link string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(fd int) {
		if uid != -1 {
			if err := unix.Fchown(fd, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Fchmod(fd, mode); err != nil {
			t.Fatal(err)
		}
	}
	for i := range depth {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		if i > 0 {
			seal(fd)
		}
		unix.Close(fd)
		fd = next
	}
	f, err := unix.Openat(fd, "f", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(f, []byte(leaf)); err != nil {
		t.Fatal(err)
	}
	unix.Close(f)
	if link != "" {
		if err := unix.Symlinkat(link, fd, "out"); err != nil {
			t.Fatal(err)
		}
	}
	seal(fd)
	unix.Close(fd)
}

// chainModes answers the permissions of the directories of a chain under
// dir, top first, read through open directories.
func chainModes(t *testing.T, dir string) []fs.FileMode {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var modes []fs.FileMode
	for {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, "d", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			unix.Close(fd)
			return modes
		}
		modes = append(modes, fs.FileMode(st.Mode&0o7777))
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
}

// memDir is a fresh directory in memory where the system offers it
// (/dev/shm), so that a deep tree is made quickly; else in TempDir.
func memDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "workspace-test-"); err == nil {
			t.Cleanup(func() { _ = removeTree(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// beyondOpenFiles is a depth deeper than the process's limit on open
// files, skipping the test where that limit is too high for such a tree
// to be made quickly.
func beyondOpenFiles(t *testing.T) int {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur > 1<<15 {
		t.Skipf("the limit on open files is %d: a tree deeper than it is too large to make in a test", lim.Cur)
	}
	return int(lim.Cur) + 100
}

// A workspace whose directories were all made read-only, thousands deep,
// is unlocked with one change of mode per directory, each through the
// directory holding it (not by a path from the top, which costs a lookup
// per level and so grows with the square of the depth); and a symbolic
// link to a directory outside, at the top or at the bottom, leaves that
// directory's mode as it was.
func TestUnlockIsLinearAndStaysInside(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	ws := filepath.Join(base, "ws")
	for _, dir := range []string{outside, ws} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../outside", filepath.Join(ws, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "abs")); err != nil {
		t.Fatal(err)
	}
	const depth = 3000
	chain(t, ws, depth, 0o555, -1, "x", outside)
	for _, dir := range []string{outside, ws} {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
	}

	lookups := 0
	traceUnlock = func(name string) { lookups += len(strings.Split(name, "/")) }
	t.Cleanup(func() { traceUnlock = nil })
	unlockTree(ws)

	modes := chainModes(t, ws)
	if len(modes) != depth {
		t.Fatalf("the chain has %d directories, want %d", len(modes), depth)
	}
	for i, m := range modes {
		if m != 0o700 {
			t.Fatalf("the directory at depth %d has mode %v after the unlock, want 0700", i+1, m)
		}
	}
	if fi, err := os.Stat(ws); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the workspace: %v %v, want mode 0700", fi, err)
	}
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("the directory outside, reached by links: %v %v, want its mode 0555 kept", fi, err)
	}
	if lookups > 2*depth {
		t.Errorf("the unlock of %d directories looked up %d names", depth, lookups)
	}
	if err := removeTree(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A workspace deeper than the process's limit on open files is measured,
// walked and removed whole: inspect counts its deepest file, the limit on
// files holds, a walk reaches the bottom, and teardown removes it.
func TestTreeDeeperThanOpenFileLimit(t *testing.T) {
	depth := beyondOpenFiles(t)
	// The seed file, the chain and its file.
	f := newFixture(t, Options{Root: memDir(t), MaxFiles: depth + 2})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "seed", "content": "abcd"}, nil), nil)
	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v", dirs)
	}
	ws := filepath.Join(f.root, "workspaces", dirs[0])
	t.Cleanup(func() { _ = removeTree(ws) })
	chain(t, ws, depth, 0o755, -1, "hello", "")

	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Files != depth+2 || in.Bytes != 9 {
		t.Errorf("inspect %+v, want %d files of 9 bytes", in, depth+2)
	}
	fails(t, f.exec(c, "write", map[string]string{"path": "more", "content": ""}, nil), CodeLimitExceeded)

	// The walk list and measure are made of reaches the bottom.
	r, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var last string
	seen := 0
	err = walkTree(context.Background(), ".", dirEntryOf("."), func() (*os.File, error) { return r.Open(".") },
		func(dir *os.File, at entryPath, d fs.DirEntry, err error) error {
			if err != nil {
				t.Errorf("%s: %v", at.name, err)
				return nil
			}
			seen++
			if d.Name() == "f" {
				last = at.String()
			}
			return nil
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The workspace itself, the seed, the chain and its file.
	if want := strings.Repeat("d/", depth) + "f"; seen != depth+3 || last != want {
		t.Errorf("the walk saw %d entries, the file %d levels down, want %d and %d", seen, strings.Count(last, "/"), depth+3, depth)
	}

	accepted(t, f.post(c.Teardown()))
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Errorf("teardown left %v", dirs)
	}
}

// A provider that is not root removes a workspace deeper than its limit on
// open files whose directories a command made read-only.
func TestReadOnlyTreeDeeperThanOpenFileLimitIsRemoved(t *testing.T) {
	depth := beyondOpenFiles(t)
	if os.Geteuid() != 0 {
		t.Skip("the tree is given to another user: the test runs as root")
	}
	post, c, root := startUnprivilegedSession(t)
	t.Cleanup(func() { _ = removeTree(filepath.Join(root, "workspaces")) })
	accepted(t, post(c.Setup(nil)))
	ok(t, post(c.Execute(tool("write"), mustJSON(t, map[string]string{"path": "seed", "content": "x"}), nil)), nil)
	dirs := workspaceDirs(t, root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v", dirs)
	}
	chain(t, filepath.Join(root, "workspaces", dirs[0]), depth, 0o555, unprivilegedUID, "x", "")
	r := post(c.Teardown())
	if r.Type != envapi.ReceiptAccepted {
		t.Fatalf("teardown answered %s %s: %s", r.Type, r.Code, r.Message)
	}
	if dirs := workspaceDirs(t, root); len(dirs) != 0 {
		t.Errorf("teardown left %v", dirs)
	}
}

// The directories a write thousands of levels deep creates are listed in
// memory linear in its path's length: listing each by a path of its own
// would take memory (and time, the deadline unchecked) growing with the
// square of the depth, gigabytes for a path of some hundred kilobytes.
func TestMissingDirsLinearInPathLength(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const depth = 20_000
	dir := strings.TrimSuffix(strings.Repeat("d/", depth), "/")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	missing, err := missingDirs(context.Background(), r, dir, dir)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != depth || missing[0] != dir || missing[depth-1] != "d" {
		t.Fatalf("%d directories missing, the deepest %d levels down, want %d", len(missing), strings.Count(missing[0], "/")+1, depth)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200*uint64(len(dir)) {
		t.Errorf("listing the directories of a path of %d bytes allocated %d bytes", len(dir), alloc)
	}
}

// A write thousands of levels deep that fails removes the directories it
// made with a few lookups for each, not one of every path from the top
// (which grows with the square of the depth, and keeps a timed-out write
// from answering for seconds after its deadline); one a command wrote
// into meanwhile is kept, with those above it.
func TestRemoveCreatedIsLinear(t *testing.T) {
	r, err := os.OpenRoot(memDir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const depth = 3000
	dir := "top/" + strings.TrimSuffix(strings.Repeat("d/", depth), "/")
	if err := r.Mkdir("top", 0o755); err != nil {
		t.Fatal(err)
	}
	made := func() []string {
		t.Helper()
		missing, err := missingDirs(context.Background(), r, dir, dir)
		if err != nil {
			t.Fatal(err)
		}
		made, err := makeDirs(context.Background(), r, dir, dir, missing)
		if err != nil || len(made) != depth {
			t.Fatalf("made %d directories: %v", len(made), err)
		}
		return made
	}
	lookups := 0
	traceCreatedRemoval = func(name string) { lookups += len(strings.Split(name, "/")) }
	t.Cleanup(func() { traceCreatedRemoval = nil })
	removeCreated(r, made())
	if _, err := r.Stat("top/d"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directories made are still there: %v", err)
	}
	if _, err := r.Stat("top"); err != nil {
		t.Errorf("the directory the write found is gone: %v", err)
	}
	if lookups > 3*depth {
		t.Errorf("removing %d directories looked up %d names", depth, lookups)
	}

	dirs := made()
	kept := dirs[depth/2]
	if err := r.WriteFile(kept+"/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removeCreated(r, dirs)
	if _, err := r.Stat(dirs[depth/2-1]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory below the one written into is still there: %v", err)
	}
	if _, err := r.Stat(kept + "/f"); err != nil {
		t.Errorf("the directory written into lost its file: %v", err)
	}
}
