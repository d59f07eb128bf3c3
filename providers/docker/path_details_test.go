package docker

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A tool on a path that does not exist, or that a symbolic link leads
// outside the workspace, fails with details {"path"} naming it, as the
// workspace provider answers: a caller learns which path failed (the
// command's cwd, a write's target behind a link) without parsing the
// message.
func TestPathFailuresNameThePath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, t.TempDir())
	c := h.commands()
	h.setup(c, "")
	defer h.post(c.Teardown())
	if out := h.shell(c, "mkdir dir && ln -s /etc escape"); out.ExitCode != 0 {
		t.Fatalf("prepare: %+v", out)
	}
	for _, tc := range []struct {
		tool  string
		input any
		code  string
		path  string
	}{
		{toolset.ToolRead, toolset.ReadInput{Path: "dir/missing.txt"}, envapi.CodeNotFound, "dir/missing.txt"},
		{toolset.ToolEdit, toolset.EditInput{Path: "gone.go", Old: "a", New: "b"}, envapi.CodeNotFound, "gone.go"},
		{toolset.ToolList, toolset.ListInput{Path: "nodir"}, envapi.CodeNotFound, "nodir"},
		{toolset.ToolCommand, toolset.CommandInput{Shell: "pwd", Cwd: "dir/nope"}, envapi.CodeNotFound, "dir/nope"},
		{toolset.ToolRead, toolset.ReadInput{Path: "escape/hostname"}, envapi.CodePathEscape, "escape/hostname"},
		{toolset.ToolWrite, toolset.WriteInput{Path: "escape/new", Content: "x"}, envapi.CodePathEscape, "escape/new"},
	} {
		r := h.post(c.Execute(tool(tc.tool), mustJSON(tc.input), nil))
		failure(t, r, tc.code)
		var details map[string]string
		if err := json.Unmarshal(r.Details, &details); err != nil || len(details) != 1 || details["path"] != tc.path {
			t.Errorf("%s %+v: %s with details %s (%v), want {\"path\": %q}", tc.tool, tc.input, r.Code, r.Details, err, tc.path)
		}
	}
}
