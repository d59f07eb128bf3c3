package workspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk"
	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A state file whose workspace directory is empty or leaves the
// workspaces root (it names what reset and teardown remove), whose phase
// is unknown, whose key is not its name or whose version is of a later
// release (whose layout may mean what this one cannot tell) stops the
// provider from starting, with the file named, and nothing on disk is
// touched.
func TestDamagedStateIsRefused(t *testing.T) {
	for name, edit := range map[string]func(map[string]any){
		"empty directory":     func(r map[string]any) { r["dir"] = "" },
		"parent directory":    func(r map[string]any) { r["dir"] = ".." },
		"path outside":        func(r map[string]any) { r["dir"] = "../bindings" },
		"another name":        func(r map[string]any) { r["dir"] = "notes" },
		"unknown phase":       func(r map[string]any) { r["phase"] = "allocating" },
		"key of another file": func(r map[string]any) { r["key"] = "s9/workspace" },
		"later version":       func(r map[string]any) { r["version"] = stateVersion + 1 },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Options{})
			c := f.commands("s1")
			accepted(t, f.post(c.Setup(nil)))
			ok(t, f.exec(c, "write", map[string]string{"path": "a.txt", "content": "kept"}, nil), nil)
			files, err := filepath.Glob(filepath.Join(f.root, "bindings", "*.json"))
			if err != nil || len(files) != 1 {
				t.Fatalf("state files %v %v", files, err)
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal(data, &rec); err != nil {
				t.Fatal(err)
			}
			edit(rec)
			data, _ = json.Marshal(rec)
			if err := os.WriteFile(files[0], data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := f.p.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = New(Options{Root: f.root})
			if err == nil || !strings.Contains(err.Error(), files[0]) {
				t.Fatalf("New with a damaged state: %v, want an error naming %s", err, files[0])
			}
			dirs := workspaceDirs(t, f.root)
			if len(dirs) != 1 {
				t.Fatalf("workspaces after the refused start: %v", dirs)
			}
			if b, err := os.ReadFile(filepath.Join(f.root, "workspaces", dirs[0], "a.txt")); err != nil || string(b) != "kept" {
				t.Fatalf("the workspace's file after the refused start: %q %v", b, err)
			}
			if _, err := os.Stat(files[0]); err != nil {
				t.Fatalf("the state file after the refused start: %v", err)
			}
		})
	}
}

// FuzzDecodeRecord: any state file decodes to a record whose workspace
// directory lies directly under the workspaces root, or to an error; never
// a panic.
func FuzzDecodeRecord(f *testing.F) {
	s := store{dir: "/state/bindings"}
	good, _ := json.Marshal(record{Key: "s/workspace", SessionID: "s", Environment: "workspace", Binding: 1,
		Config: json.RawMessage(`{"label":"x"}`), Dir: newDirName(), Phase: phaseReady, Mark: newDirName(), Ino: 2})
	name := filepath.Base(s.path("s/workspace"))
	f.Add(name, good)
	f.Add(name, []byte(`{"key":"s/workspace","dir":"","phase":"new"}`))
	f.Add(name, []byte(`{"key":"s/workspace","dir":"../x","phase":"ready"}`))
	f.Add("x.json", good)
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		rec, err := s.decode(name, data)
		if err != nil {
			return
		}
		root := "/state/workspaces"
		if dir := filepath.Join(root, rec.Dir); filepath.Dir(dir) != root || dir == root {
			t.Fatalf("record %+v names %s, not a directory of %s", rec, dir, root)
		}
		if path := filepath.Join(s.dir, name); s.path(rec.Key) != path && s.legacyPath(rec.Key) != path {
			t.Fatalf("record of %q decoded from %q", rec.Key, name)
		}
	})
}

// Session ids and environment names are identifiers of up to 128
// characters, and a binding's key joins them with its sequence: a binding
// of the longest of them is set up, survives a restart and is torn down
// like any other.
func TestLongBindingKeys(t *testing.T) {
	f := newFixture(t, Options{})
	c := envtest.NewCommands("s"+strings.Repeat("a", 127), "w"+strings.Repeat("b", 127))
	c.Brain = f.brain
	c.BindingSequence = 1<<53 - 1 // the largest sequence the protocol allows
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a.txt", "content": "kept"}, nil), nil)

	g := f.restart(Options{})
	var rd toolset.ReadOutput
	ok(t, g.exec(c, "read", map[string]string{"path": "a.txt"}, nil), &rd)
	if rd.Content != "kept" {
		t.Errorf("read after restart %+v", rd)
	}
	fails(t, g.post(c.Setup(nil)), envapi.CodeAlreadyExists)
	accepted(t, g.post(c.Teardown()))
	if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
		t.Errorf("teardown left state files %v", files)
	}
}

// A provider killed while it saved a binding's state leaves the temporary
// file of that save in <root>/bindings; the next provider started on the
// root removes it and keeps the binding.
func TestStartRemovesLeftoverStateTemporaryFiles(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	files, err := filepath.Glob(filepath.Join(f.root, "bindings", "*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("state files %v %v", files, err)
	}
	leftover := filepath.Join(f.root, "bindings", ".tmp-"+filepath.Base(files[0])+"-2718281828")
	if err := os.WriteFile(leftover, []byte(`{"key":`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := f.restart(Options{})
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the temporary file of a cut-short save is still there after a start: %v", err)
	}
	ok(t, g.exec(c, "write", map[string]string{"path": "a.txt", "content": "x"}, nil), nil)
}

// The first releases named every state file by its key in base64url,
// however long: for a key of 176 to 187 bytes that is not the name given
// now (its save's temporary file would be too long). A provider started
// on such a file finds the binding and its workspace, and the file takes
// the current name, so that a teardown forgets the binding for good.
func TestStateOfEarlierNameIsFound(t *testing.T) {
	f := newFixture(t, Options{})
	c := envtest.NewCommands("s"+strings.Repeat("a", 99), "w"+strings.Repeat("b", 78)) // a key of 180 bytes
	c.Brain = f.brain
	setup := c.Setup(nil)
	accepted(t, f.post(setup))
	ok(t, f.exec(c, "write", map[string]string{"path": "a.txt", "content": "kept"}, nil), nil)
	key := envsdk.BindingKey(setup.Operation)
	if f.p.store.legacyPath(key) == f.p.store.path(key) {
		t.Fatalf("the key %q is named alike by both", key)
	}
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.p.store.path(key), f.p.store.legacyPath(key)); err != nil {
		t.Fatal(err)
	}
	g := f.restart(Options{})
	var rd toolset.ReadOutput
	ok(t, g.exec(c, "read", map[string]string{"path": "a.txt"}, nil), &rd)
	if rd.Content != "kept" {
		t.Errorf("read after restart %+v", rd)
	}
	accepted(t, g.post(c.Teardown()))
	h := g.restart(Options{})
	fails(t, h.exec(c, "read", map[string]string{"path": "a.txt"}, nil), envapi.CodeUnavailable)
	if files, _ := filepath.Glob(filepath.Join(f.root, "bindings", "*")); len(files) != 0 {
		t.Errorf("teardown left state files %v", files)
	}
}

// A binding whose state is found under both names is refused, both named:
// which one is current is not known, and neither is removed.
func TestStateUnderBothNamesIsRefused(t *testing.T) {
	f := newFixture(t, Options{})
	c := envtest.NewCommands("s"+strings.Repeat("a", 99), "w"+strings.Repeat("b", 78))
	c.Brain = f.brain
	setup := c.Setup(nil)
	accepted(t, f.post(setup))
	key := envsdk.BindingKey(setup.Operation)
	if err := f.p.Close(); err != nil {
		t.Fatal(err)
	}
	copyFile(t, f.p.store.path(key), f.p.store.legacyPath(key))
	_, err := New(Options{Root: f.root})
	if err == nil || !strings.Contains(err.Error(), f.p.store.path(key)) || !strings.Contains(err.Error(), f.p.store.legacyPath(key)) {
		t.Fatalf("New with the state under both names: %v", err)
	}
	for _, path := range []string{f.p.store.path(key), f.p.store.legacyPath(key)} {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("after the refused start: %v", err)
		}
	}
}
