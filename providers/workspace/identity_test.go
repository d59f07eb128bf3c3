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
	recreate(t, dir, rec.Ino)
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
// inode and creation time (the first release: device and inode alone),
// without a version, mark or handle: a provider restarted on it, even
// after a remount, finds the workspace by inode and creation time, and
// still tells a directory re-created at its path where the creation time
// was recorded.
func TestStateWithoutMark(t *testing.T) {
	for _, tc := range []struct {
		name              string
		replaced, noBirth bool
	}{
		{"kept", false, false},
		{"replaced", true, false},
		{"first release", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			c, rec := allocated(t, f)
			if tc.replaced && rec.Birth == 0 {
				t.Skip("the file system under the test's root records no creation time, and may hand the inode number back")
			}
			state := stateFile(t, f.root)
			old := readState(t, state)
			for _, field := range []string{"version", "mark", "handle"} {
				delete(old, field)
			}
			if tc.noBirth {
				delete(old, "birth")
			}
			old["dev"] = json.RawMessage("1")
			if err := f.p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(state, mustJSON(t, old), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.replaced {
				dir := filepath.Join(f.root, "workspaces", rec.Dir)
				recreate(t, dir, 0)
			}
			g := f.restart(Options{})
			if tc.replaced {
				fails(t, g.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeResourceLost)
				return
			}
			kept(t, g, c)
		})
	}
}

// A provider of an earlier release, started on a root this one used (the
// release rolled back), finds the workspaces: it takes a workspace for
// the directory it allocated when the device and inode numbers and the
// creation time the state file holds are the directory's, and would take
// every one for replaced, and drop it at the next reset, if the file held
// no device number.
func TestStateKeepsWhatEarlierReleasesCompare(t *testing.T) {
	f := newFixture(t, Options{})
	_, rec := allocated(t, f)
	var earlier struct {
		Dir   string `json:"dir"`
		Phase string `json:"phase"`
		Dev   uint64 `json:"dev"`
		Ino   uint64 `json:"ino"`
		Birth int64  `json:"birth"`
	}
	data, err := os.ReadFile(stateFile(t, f.root))
	if err == nil {
		err = json.Unmarshal(data, &earlier)
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(f.root, "workspaces", rec.Dir))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	birth := birthTime(filepath.Join(f.root, "workspaces", earlier.Dir))
	if earlier.Phase != phaseReady || earlier.Dev != uint64(st.Dev) || earlier.Ino != st.Ino || (earlier.Birth != 0 && birth != 0 && earlier.Birth != birth) {
		t.Errorf("state %s: an earlier release would take the workspace (device %d, inode %d) for replaced", data, st.Dev, st.Ino)
	}
}

// stateFile is the one binding state file under root.
func stateFile(t *testing.T, root string) string {
	t.Helper()
	states, err := filepath.Glob(filepath.Join(root, "bindings", "*.json"))
	if err != nil || len(states) != 1 {
		t.Fatalf("state files %v: %v", states, err)
	}
	return states[0]
}

// readState decodes a state file field by field.
func readState(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	var fields map[string]json.RawMessage
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &fields)
	}
	if err != nil {
		t.Fatal(err)
	}
	return fields
}

// recreate removes the workspace directory dir and makes an empty one in
// its place, as someone behind the provider's back; with ino not zero,
// the new directory is seen with that inode number, as a file system that
// hands the number back would show it.
func recreate(t *testing.T, dir string, ino uint64) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if ino != 0 {
		seeAs(t, func(st *syscall.Stat_t) { st.Ino = ino })
	}
}
