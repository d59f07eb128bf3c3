package workspace

import (
	"strings"
	"testing"

	"github.com/brain-in-go/brain/envsdk/envapi"
	"github.com/brain-in-go/brain/envsdk/toolset"
)

// A path one of whose parents is a regular file (f/x, f/y/z with f a
// file) is the wrong kind of path for every tool: invalid_input, as the
// Docker provider answers it, and nothing changes. A parent that is a
// link leading outside the workspace stays a path_escape.
func TestParentIsAFile(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("echo hi > f && ln -s /etc/hostname out"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("setup command: %+v", out)
	}
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
		raw := mustJSON(t, tc.input)
		r := f.post(c.Execute(tool(tc.tool), raw, nil))
		if r.Type != envapi.ReceiptFailure || r.Code != tc.code {
			t.Errorf("%s %s = %s %s: %s, want failure %s", tc.tool, raw, r.Type, r.Code, r.Message, tc.code)
		}
	}
	var rd toolset.ReadOutput
	ok(t, f.exec(c, "read", toolset.ReadInput{Path: "f"}, nil), &rd)
	if rd.Content != "hi\n" {
		t.Fatalf("read f afterwards = %+v", rd)
	}
}

// A write below a symbolic link that leads to nothing (dl/x with dl a
// link to a missing directory) fails as a read of it does, not_found,
// and names the link: the path does not exist, it is not one that
// already does. Nothing is created.
func TestWriteBelowDanglingLink(t *testing.T) {
	f := newFixture(t, Options{})
	c := f.commands("s1")
	accepted(t, f.post(c.Setup(nil)))
	var out toolset.CommandOutput
	ok(t, f.exec(c, "command", sh("mkdir sub && ln -s missing dl && ln -s ../sub/gone sub/dl"), nil), &out)
	if out.ExitCode != 0 {
		t.Fatalf("setup command: %+v", out)
	}
	for _, tc := range []struct {
		input toolset.WriteInput
		link  string
	}{
		{toolset.WriteInput{Path: "dl/x", Content: "x"}, "dl"},
		{toolset.WriteInput{Path: "dl/y/z", Content: "x"}, "dl"},
		{toolset.WriteInput{Path: "dl/x", Content: "x", Append: true}, "dl"},
		{toolset.WriteInput{Path: "sub/dl/x", Content: "x"}, "sub/dl"},
	} {
		r := f.exec(c, toolset.ToolWrite, tc.input, nil)
		if r.Type != envapi.ReceiptFailure || r.Code != envapi.CodeNotFound || !strings.Contains(r.Message, "symbolic link "+tc.link+" ") {
			t.Errorf("write %s = %s %s: %s, want failure %s naming the link %s", tc.input.Path, r.Type, r.Code, r.Message, envapi.CodeNotFound, tc.link)
		}
	}
	var list toolset.ListOutput
	ok(t, f.exec(c, toolset.ToolList, toolset.ListInput{Recursive: true}, nil), &list)
	if len(list.Entries) != 3 {
		t.Errorf("entries after the refused writes: %+v, want sub, sub/dl and dl", list.Entries)
	}
}
