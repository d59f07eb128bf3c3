package workspace

import (
	"slices"
	"testing"

	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A directory a command made unreadable (chmod 000, a test fixture, a
// tool's private cache) hides its contents, nothing more: commands, writes,
// listings and inspect go on working, so a command can put it right.
func TestUnreadableDirectoryKeepsWorkspaceUsable(t *testing.T) {
	post, c, _ := startUnprivilegedSession(t)
	command := func(line string) toolset.CommandOutput {
		t.Helper()
		var out toolset.CommandOutput
		ok(t, post(c.Execute(tool("command"), mustJSON(t, sh(line)), nil)), &out)
		return out
	}
	accepted(t, post(c.Setup(nil)))
	if out := command("mkdir -p locked/sub && echo x > locked/f && chmod 000 locked && ! ls locked 2>/dev/null"); out.ExitCode != 0 {
		t.Fatalf("the provider's user can read a mode 000 directory; the test shows nothing: %+v", out)
	}

	ok(t, post(c.Execute(tool("write"), mustJSON(t, map[string]string{"path": "notes.txt", "content": "still usable"}), nil)), nil)
	var ls toolset.ListOutput
	ok(t, post(c.Execute(tool("list"), mustJSON(t, map[string]any{"recursive": true}), nil)), &ls)
	var paths []string
	for _, e := range ls.Entries {
		paths = append(paths, e.Path)
	}
	if !slices.Contains(paths, "locked") || !slices.Contains(paths, "notes.txt") {
		t.Errorf("recursive list %v, want locked and notes.txt among them", paths)
	}
	var in InspectOutput
	ok(t, post(c.Call("inspect", nil)), &in)
	if !in.Allocated || in.Files < 2 {
		t.Errorf("inspect %+v", in)
	}
	if out := command("chmod 755 locked && cat locked/f"); out.ExitCode != 0 || out.Stdout != "x\n" {
		t.Errorf("repairing command: %+v", out)
	}
}
