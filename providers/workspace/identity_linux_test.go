package workspace

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"golang.org/x/sys/unix"
)

// withoutMarksOrBirth makes the provider see workspace directories as on
// a file system that keeps no extended attributes and records no
// creation time, for the rest of the test: the kernel refuses an
// attribute of no namespace as such a file system refuses every one.
func withoutMarksOrBirth(t *testing.T) {
	markAttr = "brain.workspace"
	readBirth = func(string) int64 { return 0 }
	t.Cleanup(func() { markAttr, readBirth = "user.brain.workspace", birthTime })
}

// Where the file system keeps no extended attributes and records no
// creation time (an NFS mount, for one), a directory removed and
// re-created at the workspace's path that gets its inode number back is
// told by its file handle, which holds the inode's generation: the
// workspace is lost, and stays lost after a restart. A remount, which
// gives the file system another device number, is no loss.
func TestReplacedWorkspaceWithoutMarkIsLost(t *testing.T) {
	t.Run("replaced", func(t *testing.T) {
		withoutMarksOrBirth(t)
		f := newFixture(t, Options{})
		c, rec := allocated(t, f)
		if rec.Mark != "" || rec.Birth != 0 {
			t.Fatalf("record %+v: a mark or a creation time was recorded", rec)
		}
		if rec.Handle == "" {
			t.Skip("the file system under the test's root gives no file handles")
		}
		dir := filepath.Join(f.root, "workspaces", rec.Dir)
		recreate(t, dir, rec.Ino)
		r := f.exec(c, "read", map[string]string{"path": "a"}, nil)
		fails(t, r, envapi.CodeResourceLost)
		if !strings.Contains(r.Message, "replaced") {
			t.Errorf("message %q", r.Message)
		}
		g := f.restart(Options{})
		fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
	})
	t.Run("remounted", func(t *testing.T) {
		withoutMarksOrBirth(t)
		f := newFixture(t, Options{})
		c, _ := allocated(t, f)
		seeAs(t, func(st *syscall.Stat_t) { st.Dev ^= 0x55 })
		kept(t, f.restart(Options{}), c)
	})
}

// A provider whose workspaces lie on a file system that keeps no
// extended attributes, creation times or file handles (ramfs) can tell a
// workspace directory re-created behind its back only by the inode
// number: it warns the operator so, once, at the first allocation. One
// whose file system keeps them does not.
func TestWeakIdentityIsWarned(t *testing.T) {
	logged := func(t *testing.T, root string) string {
		t.Helper()
		var log envtest.Buffer
		f := newFixture(t, Options{Root: root, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		for _, session := range []string{"s1", "s2"} {
			c := f.commands(session)
			accepted(t, f.post(c.Setup(nil)))
			ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "x"}, nil), nil)
		}
		return log.String()
	}
	const warning = "keeps no extended attributes, creation times or file handles"
	if got := logged(t, t.TempDir()); strings.Contains(got, warning) {
		t.Errorf("warned on the test's file system, which keeps marks: %s", got)
	}

	if os.Geteuid() != 0 {
		t.Skip("mounting a ramfs needs root")
	}
	ram := t.TempDir()
	if err := unix.Mount("ramfs", ram, "ramfs", 0, "mode=700"); err != nil {
		t.Skipf("mount a ramfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(ram, unix.MNT_DETACH) })
	if got := logged(t, ram); strings.Count(got, warning) != 1 {
		t.Errorf("log on a ramfs, want the warning once:\n%s", got)
	}
}

// A workspace whose state, written by an earlier release, identifies it
// by its inode number alone is given a mark at the next start: a directory
// re-created at its path afterwards is told from it even where it gets
// the inode number back and no creation time is read.
func TestStateWithoutMarkGainsOne(t *testing.T) {
	f := newFixture(t, Options{})
	c, rec := allocated(t, f)
	if rec.Mark == "" {
		t.Skip("the file system under the test's root keeps no extended attributes")
	}
	dir := filepath.Join(f.root, "workspaces", rec.Dir)
	state := stateFile(t, f.root)
	old := readState(t, state)
	for _, field := range []string{"version", "mark", "handle"} {
		delete(old, field)
	}
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, mustJSON(t, old), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lremovexattr(dir, markAttr); err != nil {
		t.Fatal(err)
	}

	g := f.restart(Options{})
	kept(t, g, c)
	if readState(t, state)["mark"] == nil {
		data, _ := os.ReadFile(state)
		t.Errorf("the state after a start holds no mark: %s", data)
	}
	recreate(t, dir, rec.Ino)
	readBirth = func(string) int64 { return 0 }
	readHandle = func(string) string { return "" }
	t.Cleanup(func() { readBirth, readHandle = birthTime, fileHandle })
	fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
}
