package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

func workspaceDirs(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestSetupAllocatesNothing(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"label":"demo"}`))))
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Fatalf("setup allocated %v", dirs)
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if in.Allocated || in.Phase != "new" || in.Label != "demo" {
		t.Errorf("inspect %+v", in)
	}
	fails(t, f.post(c.Setup(nil)), envapi.CodeAlreadyExists)
}

func TestConcurrentFirstExecutesAllocateOnce(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	const n = 20
	var wg sync.WaitGroup
	receipts := make([]envapi.Receipt, n)
	for i := range n {
		cmd := c.Execute(tool("write"), mustJSON(t, map[string]string{"path": fmt.Sprintf("f%02d", i), "content": "x"}), nil)
		wg.Go(func() { receipts[i] = f.post(cmd) })
	}
	wg.Wait()
	for _, r := range receipts {
		ok(t, r, nil)
	}
	if got := f.p.allocations.Load(); got != 1 {
		t.Errorf("%d allocations, want 1", got)
	}
	if dirs := workspaceDirs(t, f.root); len(dirs) != 1 {
		t.Errorf("workspace directories %v, want one", dirs)
	}
	var list struct{ Entries []toolset.Entry }
	ok(t, f.exec(c, "list", map[string]any{}, nil), &list)
	if len(list.Entries) != n {
		t.Errorf("list has %d entries, want %d: %+v", len(list.Entries), n, list.Entries)
	}
	var in InspectOutput
	ok(t, f.post(c.Call("inspect", nil)), &in)
	if !in.Allocated || in.Files != n || in.Bytes != n {
		t.Errorf("inspect %+v", in)
	}
}

func TestBindingsAreIsolated(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := f.commands("sa"), f.commands("sb")
	accepted(t, f.post(a.Setup(nil)))
	accepted(t, f.post(b.Setup(nil)))
	ok(t, f.exec(a, "write", map[string]string{"path": "secret.txt", "content": "A's"}, nil), nil)
	ok(t, f.exec(b, "write", map[string]string{"path": "mine.txt", "content": "B's"}, nil), nil)

	fails(t, f.exec(b, "read", map[string]string{"path": "secret.txt"}, nil), envapi.CodeNotFound)
	var list struct{ Entries []toolset.Entry }
	ok(t, f.exec(b, "list", map[string]any{"recursive": true}, nil), &list)
	if len(list.Entries) != 1 || list.Entries[0].Path != "mine.txt" {
		t.Errorf("b sees %+v", list.Entries)
	}
	// Reaching A's directory by a relative path leaves B's workspace.
	dirs := workspaceDirs(t, f.root)
	for _, d := range dirs {
		fails(t, f.exec(b, "read", map[string]string{"path": "../" + d + "/secret.txt"}, nil), envapi.CodePathEscape)
	}
	var cmd toolset.CommandOutput
	ok(t, f.exec(b, "command", sh("cat secret.txt 2>/dev/null || echo absent; pwd"), nil), &cmd)
	if !strings.HasPrefix(cmd.Stdout, "absent\n") {
		t.Errorf("b's command output %q", cmd.Stdout)
	}
}

func TestPathEscapesRefused(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("ln -s /etc etc-link && mkdir -p sub && echo inside > sub/f && ln -s sub inner-link"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("setup command: %+v", out)
	}
	cases := []struct {
		tool  string
		input map[string]any
	}{
		{"read", map[string]any{"path": "../x"}},
		{"read", map[string]any{"path": "sub/../../x"}},
		{"read", map[string]any{"path": "/etc/passwd"}},
		{"read", map[string]any{"path": "etc-link/passwd"}},
		{"write", map[string]any{"path": "../x", "content": "no"}},
		{"write", map[string]any{"path": "/tmp/x", "content": "no"}},
		{"write", map[string]any{"path": "etc-link/evil", "content": "no"}},
		{"list", map[string]any{"path": "etc-link"}},
		{"list", map[string]any{"path": ".."}},
		{"edit", map[string]any{"path": "etc-link/hostname", "old": "a", "new": "b"}},
		{"command", map[string]any{"argv": []string{"true"}, "cwd": "../"}},
		{"command", map[string]any{"argv": []string{"true"}, "cwd": "/tmp"}},
		{"command", map[string]any{"argv": []string{"true"}, "cwd": "etc-link"}},
	}
	for _, tc := range cases {
		t.Run(tc.tool+" "+fmt.Sprint(tc.input["path"], tc.input["cwd"]), func(t *testing.T) {
			fails(t, f.exec(c, tc.tool, tc.input, nil), envapi.CodePathEscape)
		})
	}
	if _, err := os.Stat("/etc/evil"); err == nil {
		t.Fatal("a write escaped to /etc/evil")
	}
	// Links that stay inside are followed.
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]any{"path": "inner-link/f"}, nil), &rd)
	if rd.Content != "inside\n" {
		t.Errorf("read through inner link: %+v", rd)
	}
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"cat", "f"}, "cwd": "inner-link"}, nil), &out)
	if out.Stdout != "inside\n" {
		t.Errorf("command in inner link: %+v", out)
	}
}

func TestTeardownLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	fails(t, f.exec(c, "list", map[string]any{}, nil), envapi.CodeUnavailable)
	fails(t, f.post(c.Detach()), envapi.CodeUnavailable)
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
	accepted(t, f.post(c.Detach()))
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), &rd) // detach keeps the files
	if rd.Content != "1" {
		t.Errorf("after detach: %+v", rd)
	}
	accepted(t, f.post(c.Teardown()))
	if dirs := workspaceDirs(t, f.root); len(dirs) != 0 {
		t.Errorf("teardown left %v", dirs)
	}
	accepted(t, f.post(c.Teardown())) // repeatable
	fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeUnavailable)
	fails(t, f.post(c.Call("inspect", nil)), envapi.CodeUnavailable)
	// A new setup after teardown starts empty.
	accepted(t, f.post(c.Setup(nil)))
	fails(t, f.exec(c, "read", map[string]string{"path": "a"}, nil), envapi.CodeNotFound)
}

func TestInvalidConfigurationAndDescriptors(t *testing.T) {
	f := newFixture(t, Options{OutputLimit: 1000})
	for cfg, field := range map[string]string{
		`{"output_limit": -1}`:                               "configuration.output_limit",
		`{"output_limit": 5000}`:                             "configuration.output_limit",
		`{"timeout_ms": "soon"}`:                             "configuration.timeout_ms",
		`{"colour": "blue"}`:                                 "configuration",
		`{"env": {"1BAD": "x"}}`:                             "configuration.env",
		`{"label": ` + `"` + strings.Repeat("x", 200) + `"}`: "configuration.label",
	} {
		c := f.commands("s1")
		r := f.post(c.Setup(json.RawMessage(cfg)))
		fails(t, r, envapi.CodeInvalidConfiguration)
		if !strings.Contains(r.Message, field) {
			t.Errorf("%s: message %q does not name %s", cfg, r.Message, field)
		}
	}
	c := f.commands("s2")
	accepted(t, f.post(c.Setup(nil)))
	fails(t, f.post(c.Execute(json.RawMessage(`{"tool":"teleport"}`), json.RawMessage(`{}`), nil)), envapi.CodeUnsupported)
	fails(t, f.post(c.Execute(json.RawMessage(`"reference_echo"`), json.RawMessage(`{}`), nil)), envapi.CodeUnsupported)
	fails(t, f.exec(c, "command", map[string]any{}, nil), envapi.CodeInvalidInput)
	fails(t, f.exec(c, "command", map[string]any{"argv": []string{"true"}, "bogus": 1}, nil), envapi.CodeInvalidInput)
	fails(t, f.post(c.Call("teleport", nil)), envapi.CodeUnsupported)
}

func TestAllowList(t *testing.T) {
	f := newFixture(t, Options{Commands: []string{"echo"}})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"echo", "hi"}}, nil), &out)
	if out.Stdout != "hi\n" {
		t.Errorf("echo: %+v", out)
	}
	fails(t, f.exec(c, "command", map[string]any{"argv": []string{"cat", "/etc/hostname"}}, nil), "not_allowed")
	fails(t, f.exec(c, "command", sh("echo hi"), nil), "not_allowed")
}

func TestSizeLimits(t *testing.T) {
	f := newFixture(t, Options{MaxBytes: 100, MaxFiles: 3})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": strings.Repeat("x", 60)}, nil), nil)
	fails(t, f.exec(c, "write", map[string]string{"path": "b", "content": strings.Repeat("x", 60)}, nil), CodeLimitExceeded)
	ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": strings.Repeat("y", 90)}, nil), nil) // replaces
	ok(t, f.exec(c, "write", map[string]string{"path": "b", "content": ""}, nil), nil)
	fails(t, f.exec(c, "write", map[string]string{"path": "d/e", "content": ""}, nil), CodeLimitExceeded) // 2 entries
	ok(t, f.exec(c, "command", sh("touch c d e"), nil), nil)                                              // commands are not stopped...
	fails(t, f.exec(c, "command", sh("true"), nil), CodeLimitExceeded)                                    // ...but the next does not start
}

func TestEditAndReadTools(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "dir/main.go", "content": "a := 1\nb := 1\n"}, nil), nil)
	r := f.exec(c, "edit", map[string]string{"path": "dir/main.go", "old": ":= 1", "new": ":= 2"}, nil)
	fails(t, r, envapi.CodeInvalidInput)
	if string(r.Details) != `{"matches":2}` {
		t.Errorf("details %s", r.Details)
	}
	fails(t, f.exec(c, "edit", map[string]string{"path": "dir/main.go", "old": "zzz", "new": "y"}, nil), envapi.CodeInvalidInput)
	fails(t, f.exec(c, "edit", map[string]string{"path": "dir/none.go", "old": "a", "new": "b"}, nil), envapi.CodeNotFound)
	ok(t, f.exec(c, "edit", map[string]string{"path": "dir/main.go", "old": "b := 1", "new": "b := 42"}, nil), nil)
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", map[string]any{"path": "dir/main.go", "offset": 7, "limit": 4}, nil), &rd)
	if rd.Content != "b :=" || !rd.Truncated || rd.Size != 15 || rd.Encoding != "utf8" {
		t.Errorf("read %+v", rd)
	}
	ok(t, f.exec(c, "write", map[string]string{"path": "bin", "content": "/wD+", "encoding": "base64"}, nil), nil)
	ok(t, f.exec(c, "read", map[string]any{"path": "bin"}, nil), &rd)
	if rd.Content != "/wD+" || rd.Encoding != "base64" {
		t.Errorf("binary read %+v", rd)
	}
	fails(t, f.exec(c, "read", map[string]any{"path": "dir"}, nil), envapi.CodeInvalidInput)
	var list struct{ Entries []toolset.Entry }
	ok(t, f.exec(c, "list", map[string]any{"recursive": true}, nil), &list)
	got := fmt.Sprint(list.Entries)
	if got != "[{bin file 3} {dir dir 0} {dir/main.go file 15}]" {
		t.Errorf("list %s", got)
	}
}

func TestReleaseOnTurnEnd(t *testing.T) {
	for _, policy := range []string{ReleaseKeep, ReleaseWipe} {
		t.Run(policy, func(t *testing.T) {
			f := newFixture(t, Options{Release: policy})
			c := f.commands("s1")
			r := f.post(c.Setup(json.RawMessage(`{"release_on_turn_end": true}`)))
			accepted(t, r)
			if r.OnTurnEnd != "release" {
				t.Fatalf("on_turn_end %q", r.OnTurnEnd)
			}
			ok(t, f.exec(c, "write", map[string]string{"path": "a", "content": "1"}, nil), nil)
			var out struct {
				Released bool
				Policy   string
			}
			ok(t, f.post(c.Call("release", json.RawMessage(`{"sequence": 2}`))), &out)
			if out.Policy != policy || out.Released != (policy == ReleaseWipe) {
				t.Errorf("release %+v", out)
			}
			r = f.exec(c, "read", map[string]string{"path": "a"}, nil)
			if policy == ReleaseKeep {
				ok(t, r, nil)
			} else {
				fails(t, r, envapi.CodeNotFound)
			}
			fails(t, f.post(c.Call("release", json.RawMessage(`{}`))), envapi.CodeInvalidInput)
		})
	}
	f := newFixture(t, Options{})
	c := f.commands("s1")
	if r := f.post(c.Setup(nil)); r.OnTurnEnd != "" {
		t.Errorf("setup without release_on_turn_end registered %q", r.OnTurnEnd)
	}
}

func TestMethodsDeclared(t *testing.T) {
	p, err := New(Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range p.Methods() {
		for _, s := range []json.RawMessage{m.InputSchema, m.OutputSchema} {
			var v map[string]any
			if err := json.Unmarshal(s, &v); err != nil || v["type"] != "object" {
				t.Errorf("%s: schema %s: %v", name, s, err)
			}
		}
	}
}

// With the programs restricted, a session cannot make an allowed program
// load code of its choosing through the dynamic loader's variables, from
// the input nor from the binding's configuration; without a restriction
// they pass as any other variable.
func TestAllowListRefusesLoaderVariables(t *testing.T) {
	f := newFixture(t, Options{Commands: []string{"printenv"}})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	ok(t, f.exec(c, "write", map[string]string{"path": "lib.so", "content": "not really a library"}, nil), nil)
	for _, name := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GCONV_PATH"} {
		in := map[string]any{"argv": []string{"printenv", name}, "env": map[string]string{name: "lib.so"}}
		r := f.exec(c, "command", in, nil)
		fails(t, r, "not_allowed")
		if !strings.Contains(r.Message, name) {
			t.Errorf("message %q does not name %s", r.Message, name)
		}
	}
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"printenv", "GREETING"}, "env": map[string]string{"GREETING": "hi"}}, nil), &out)
	if out.Stdout != "hi\n" {
		t.Errorf("an ordinary variable: %+v", out)
	}
	r := f.post(f.commands("s2").Setup(json.RawMessage(`{"env": {"LD_PRELOAD": "lib.so"}}`)))
	fails(t, r, envapi.CodeInvalidConfiguration)
	if !strings.Contains(r.Message, "LD_PRELOAD") {
		t.Errorf("message %q does not name LD_PRELOAD", r.Message)
	}

	g := newFixture(t, Options{})
	d := g.commands("s1")
	accepted(t, g.post(d.Setup(json.RawMessage(`{"env": {"LD_LIBRARY_PATH": "/opt/lib"}}`))))
	ok(t, g.exec(d, "command", map[string]any{"argv": []string{"printenv", "LD_LIBRARY_PATH"}}, nil), &out)
	if out.Stdout != "/opt/lib\n" {
		t.Errorf("without a restriction: %+v", out)
	}
}
