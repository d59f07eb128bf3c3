package workspace

import (
	"encoding/json"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A command sees the provider's variables the operator allows and no
// others, WORKSPACE, the binding's variables and the input's, the later
// overriding the earlier; it starts in the workspace (or in cwd inside it).
func TestCommandEnvironmentAndDirectory(t *testing.T) {
	t.Setenv("WORKSPACE_TEST_ALLOWED", "passed")
	t.Setenv("WORKSPACE_TEST_SECRET", "leaked")
	f := newFixture(t, Options{EnvAllow: []string{"PATH", "WORKSPACE_TEST_ALLOWED"}})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(json.RawMessage(`{"env": {"FROM_BINDING": "b", "BOTH": "binding"}}`))))
	ok(t, f.exec(c, "write", map[string]string{"path": "sub/f", "content": ""}, nil), nil)
	line := `echo "allowed=$WORKSPACE_TEST_ALLOWED secret=${WORKSPACE_TEST_SECRET-unset}"; ` +
		`echo "binding=$FROM_BINDING both=$BOTH"; echo "ws=$WORKSPACE"; pwd -P`
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", map[string]any{"shell": line, "cwd": "sub", "env": map[string]string{"BOTH": "input"}}, nil), &out)
	dirs := workspaceDirs(t, f.root)
	if len(dirs) != 1 {
		t.Fatalf("workspaces %v", dirs)
	}
	ws, err := filepath.EvalSymlinks(filepath.Join(f.root, "workspaces", dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := "allowed=passed secret=unset\nbinding=b both=input\nws=" + filepath.Join(f.root, "workspaces", dirs[0]) + "\n" + filepath.Join(ws, "sub") + "\n"
	if out.Stdout != want || out.ExitCode != 0 {
		t.Errorf("command output %q (exit %d), want %q", out.Stdout, out.ExitCode, want)
	}
}

// A command killed by a signal answers the signal's name (as Go's
// syscall.Signal spells it); one that exits names none.
func TestCommandNamesItsSignal(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", map[string]any{"argv": []string{"sh", "-c", "kill -TERM $$"}}, nil), &out)
	if out.Signal != syscall.SIGTERM.String() {
		t.Errorf("output %+v, want signal %q", out, syscall.SIGTERM.String())
	}
	var exited toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("exit 3"), nil), &exited)
	if exited.Signal != "" || exited.ExitCode != 3 {
		t.Errorf("output %+v, want exit 3 and no signal", exited)
	}
}
