package docker

import (
	"encoding/json"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A path one of whose parents is a regular file (f/x, f/y/z with f a
// file) is the wrong kind of path for every tool: invalid_input naming
// the parent, as the workspace provider answers it, and nothing changes.
// A parent that is a link leading outside the workspace stays a
// path_escape.
func TestParentIsAFile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "")
	c := h.commands()
	h.setup(c, "")
	h.shell(c, "echo hi > f && ln -s /etc/hostname out")
	for _, tc := range []struct {
		tool  string
		input any
		code  string
	}{
		{toolset.ToolRead, toolset.ReadInput{Path: "f/x"}, envapi.CodeInvalidInput},
		{toolset.ToolRead, toolset.ReadInput{Path: "f/y/z"}, envapi.CodeInvalidInput},
		{toolset.ToolWrite, toolset.WriteInput{Path: "f/x", Content: "x"}, envapi.CodeInvalidInput},
		{toolset.ToolWrite, toolset.WriteInput{Path: "f/y/z", Content: "x"}, envapi.CodeInvalidInput},
		{toolset.ToolWrite, toolset.WriteInput{Path: "f/x", Content: "x", Append: true}, envapi.CodeInvalidInput},
		{toolset.ToolEdit, toolset.EditInput{Path: "f/x", Old: "a", New: "b"}, envapi.CodeInvalidInput},
		{toolset.ToolList, toolset.ListInput{Path: "f/x"}, envapi.CodeInvalidInput},
		{toolset.ToolCommand, toolset.CommandInput{Shell: "pwd", Cwd: "f/x"}, envapi.CodeInvalidInput},
		{toolset.ToolRead, toolset.ReadInput{Path: "out/x"}, envapi.CodePathEscape},
		{toolset.ToolWrite, toolset.WriteInput{Path: "out/x", Content: "x"}, envapi.CodePathEscape},
	} {
		raw := mustJSON(tc.input)
		r := h.post(c.Execute(tool(tc.tool), raw, nil))
		if r.Type != envapi.ReceiptFailure || r.Code != tc.code {
			t.Errorf("%s %s = %s %s: %s, want failure %s", tc.tool, raw, r.Type, r.Code, r.Message, tc.code)
		}
	}
	r := h.post(c.Execute(tool(toolset.ToolRead), mustJSON(toolset.ReadInput{Path: "f"}), nil))
	var out toolset.ReadOutput
	if r.Type != envapi.ReceiptResult || json.Unmarshal(r.Output, &out) != nil || out.Content != "hi\n" {
		t.Fatalf("read f afterwards = %+v", r)
	}
}
