package workspace

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// restat is a directory's FileInfo with its Stat_t changed.
type restat struct {
	fs.FileInfo
	st syscall.Stat_t
}

func (r restat) Sys() any { return &r.st }

// seeAs makes the provider stat workspace directories through change, for
// the rest of the test.
func seeAs(t *testing.T, change func(*syscall.Stat_t)) {
	statDir = func(path string) (fs.FileInfo, error) {
		fi, err := os.Lstat(path)
		if err != nil {
			return nil, err
		}
		st := *fi.Sys().(*syscall.Stat_t)
		change(&st)
		return restat{fi, st}, nil
	}
	t.Cleanup(func() { statDir = os.Lstat })
}

// allocated sets up a binding of f, writes the file a holding "kept" in
// its workspace, and returns the binding's commands and record.
func allocated(t *testing.T, f *fixture) (*envtest.Commands, record) {
	t.Helper()
	c := f.commands("s1")
	setup := c.Setup(nil)
	accepted(t, f.post(setup))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "kept"}, nil), nil)
	b, err := f.p.lookup(envsdk.BindingKey(setup.Operation))
	if err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return c, b.rec
}

// kept asserts that f's workspace still holds what allocated wrote.
func kept(t *testing.T, f *fixture, c *envtest.Commands) {
	t.Helper()
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), &rd)
	if rd.Content != "kept" {
		t.Errorf("read %+v", rd)
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if !in.Allocated || in.Phase != phaseReady {
		t.Errorf("inspect %+v, want the workspace allocated", in)
	}
}

// A remount gives the file system another device number (overlayfs and
// btrfs number theirs anew at each mount), and overlayfs over layers on
// several file systems gives a directory another inode number too: a
// provider restarted after one finds its workspaces, not lost ones.
func TestRemountedWorkspaceIsNoLoss(t *testing.T) {
	for _, tc := range []struct {
		name     string
		change   func(*syscall.Stat_t)
		needMark bool
	}{
		{"device", func(st *syscall.Stat_t) { st.Dev ^= 0x55 }, false},
		{"device and inode", func(st *syscall.Stat_t) { st.Dev ^= 0x55; st.Ino ^= 0x55 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			c, rec := allocated(t, f)
			if tc.needMark && rec.Mark == "" {
				t.Skip("the file system under the test's root keeps no extended attributes")
			}
			seeAs(t, tc.change)
			g := f.restart(Options{})
			kept(t, g, c)
		})
	}
}

// A directory removed and re-created at the workspace's path is lost even
// when the file system hands its inode number back and records no creation
// time: the mark written at its creation is missing.
func TestReplacedWorkspaceWithItsInodeIsLost(t *testing.T) {
	f := newFixture(t, Options{})
	c, rec := allocated(t, f)
	if rec.Mark == "" {
		t.Skip("the file system under the test's root keeps no extended attributes")
	}
	dir := filepath.Join(f.root, "workspaces", rec.Dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	seeAs(t, func(st *syscall.Stat_t) { st.Ino = rec.Ino })
	readBirth = func(string) int64 { return 0 }
	t.Cleanup(func() { readBirth = birthTime })
	r := f.exec(c, "read", map[string]string{"path": "a"}, nil)
	fails(t, r, envapi.CodeResourceLost)
	if !strings.Contains(r.Message, "replaced") {
		t.Errorf("message %q", r.Message)
	}
	// It stays lost after a restart.
	g := f.restart(Options{})
	fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
}

// The state file of an earlier release names its directory by device,
// inode and creation time, without a mark: a provider restarted on it,
// even after a remount, finds the workspace by inode and creation time,
// and still tells a directory re-created at its path.
func TestStateWithoutMark(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		name := "kept"
		if replaced {
			name = "replaced"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Options{})
			c, rec := allocated(t, f)
			if replaced && rec.Birth == 0 {
				t.Skip("the file system under the test's root records no creation time, and may hand the inode number back")
			}
			states, err := filepath.Glob(filepath.Join(f.root, "bindings", "*.json"))
			if err != nil || len(states) != 1 {
				t.Fatalf("state files %v: %v", states, err)
			}
			var old map[string]json.RawMessage
			data, err := os.ReadFile(states[0])
			if err == nil {
				err = json.Unmarshal(data, &old)
			}
			if err != nil {
				t.Fatal(err)
			}
			delete(old, "mark")
			old["dev"] = json.RawMessage("1")
			if err := f.p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(states[0], mustJSON(t, old), 0o600); err != nil {
				t.Fatal(err)
			}
			if replaced {
				dir := filepath.Join(f.root, "workspaces", rec.Dir)
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			g := f.restart(Options{})
			if replaced {
				fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
				return
			}
			kept(t, g, c)
		})
	}
}
